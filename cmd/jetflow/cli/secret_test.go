package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/token"
)

// TestTokenSecretConfig: the secret comes from a flag, its variable or a
// file, as hex or base64 of at least 32 bytes; every refusal names its
// flag and variable and never quotes the secret.
func TestTokenSecretConfig(t *testing.T) {
	secret := bytes.Repeat([]byte{0xa5}, token.SecretSize)
	old := bytes.Repeat([]byte{0x5a}, token.SecretSize)
	hexSecret, b64Secret := hex.EncodeToString(secret), base64.StdEncoding.EncodeToString(secret)
	short := hex.EncodeToString(secret[:20])
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(b64Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shortFile := filepath.Join(dir, "short")
	if err := os.WriteFile(shortFile, []byte(short), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		env       map[string]string
		args      []string
		none      bool // no secret configured
		previous  []byte
		wantErr   string
		forbidden string // must not appear in the error
	}{
		{name: "none", none: true},
		{name: "hex flag", args: []string{"--token-secret", hexSecret}},
		{name: "base64 variable", env: map[string]string{"JETFLOW_TOKEN_SECRET": b64Secret}},
		{name: "file", args: []string{"--token-secret-file", file}},
		{name: "file from variable", env: map[string]string{"JETFLOW_TOKEN_SECRET_FILE": file}},
		{name: "previous", args: []string{"--token-secret", hexSecret, "--token-secret-previous", "  " + hex.EncodeToString(old)}, previous: old},
		{
			name: "flag and file", args: []string{"--token-secret", hexSecret, "--token-secret-file", file},
			wantErr: "--token-secret and --token-secret-file (JETFLOW_TOKEN_SECRET, JETFLOW_TOKEN_SECRET_FILE) are alternatives", forbidden: hexSecret,
		},
		{
			name: "short", env: map[string]string{"JETFLOW_TOKEN_SECRET": short},
			wantErr: "--token-secret (JETFLOW_TOKEN_SECRET): invalid token secret: 20 bytes, at least 32 are needed (make one with: openssl rand -hex 32)", forbidden: short,
		},
		{
			name: "malformed", args: []string{"--token-secret", "hunter2 is my password"},
			wantErr: "--token-secret (JETFLOW_TOKEN_SECRET): invalid token secret: neither hex nor base64", forbidden: "hunter2",
		},
		{
			name: "short file", args: []string{"--token-secret-file", shortFile},
			wantErr: "--token-secret-file (JETFLOW_TOKEN_SECRET_FILE) " + shortFile + ": invalid token secret: 20 bytes", forbidden: short,
		},
		{name: "missing file", args: []string{"--token-secret-file", filepath.Join(dir, "absent")}, wantErr: "--token-secret-file (JETFLOW_TOKEN_SECRET_FILE): open "},
		{
			name: "previous alone", env: map[string]string{"JETFLOW_TOKEN_SECRET_PREVIOUS": hexSecret},
			wantErr: "--token-secret-previous (JETFLOW_TOKEN_SECRET_PREVIOUS) needs --token-secret", forbidden: hexSecret,
		},
		{
			name: "bad previous", args: []string{"--token-secret", hexSecret, "--token-secret-previous", hex.EncodeToString(old) + "," + short},
			wantErr: "--token-secret-previous (JETFLOW_TOKEN_SECRET_PREVIOUS) secret 2: invalid token secret: 20 bytes", forbidden: short,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"JETFLOW_TOKEN_SECRET", "JETFLOW_TOKEN_SECRET_FILE", "JETFLOW_TOKEN_SECRET_PREVIOUS"} {
				t.Setenv(k, c.env[k])
			}
			var sc secretConfig
			cmd := &cobra.Command{Use: "x"}
			addSecretFlags(cmd, &sc)
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			s, err := sc.signer()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("signer: %v; want %q", err, c.wantErr)
				}
				if c.forbidden != "" && strings.Contains(err.Error(), c.forbidden) {
					t.Fatalf("the error quotes the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.none {
				if s != nil {
					t.Fatal("a signer without a secret")
				}
				return
			}
			want, _ := token.New(secret)
			if s == nil || s.Fingerprint() != want.Fingerprint() {
				t.Fatalf("signer of another secret")
			}
			if c.previous != nil {
				p, _ := token.New(c.previous)
				if !s.Verify("r", "a", "n", 1, p.Sign("r", "a", "n", 1)) {
					t.Fatal("the previous secret's tokens are refused")
				}
			}
		})
	}
}

func TestAckWaitConfig(t *testing.T) {
	cases := []struct {
		name    string
		env     string
		args    []string
		want    time.Duration
		wantErr string
	}{
		{name: "default", want: 30 * time.Second},
		{name: "flag", args: []string{"--ack-wait", "5s"}, want: 5 * time.Second},
		{name: "variable", env: "2s", want: 2 * time.Second},
		{name: "flag wins", env: "2s", args: []string{"--ack-wait", "1m"}, want: time.Minute},
		{name: "below a second", args: []string{"--ack-wait", "500ms"}, wantErr: "--ack-wait (JETFLOW_ACK_WAIT) must be at least 1s, got 500ms"},
		{name: "zero", env: "0s", wantErr: "--ack-wait (JETFLOW_ACK_WAIT) must be at least 1s, got 0s"},
		{name: "not a duration", env: "soon", wantErr: `environment variable JETFLOW_ACK_WAIT="soon"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JETFLOW_ACK_WAIT", c.env)
			var svc serviceConfig
			cmd := &cobra.Command{Use: "x"}
			svc.addFlags(cmd)
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			err := svc.resolve()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("resolve: %v; want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || svc.AckWait != c.want {
				t.Fatalf("AckWait %v, %v; want %v", svc.AckWait, err, c.want)
			}
		})
	}
}

func TestMigrateInputsConfig(t *testing.T) {
	cases := []struct {
		name string
		env  string
		args []string
		want bool
	}{
		{name: "default"},
		{name: "flag", args: []string{"--migrate-inputs"}, want: true},
		{name: "variable", env: "true", want: true},
		{name: "flag wins", env: "true", args: []string{"--migrate-inputs=false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JETFLOW_MIGRATE_INPUTS", c.env)
			var svc serviceConfig
			cmd := &cobra.Command{Use: "x"}
			svc.addFlags(cmd)
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			if err := svc.resolve(); err != nil || svc.MigrateInputs != c.want {
				t.Fatalf("MigrateInputs %v, %v; want %v", svc.MigrateInputs, err, c.want)
			}
		})
	}
}

func TestHintStartNamesTheMigrationFlag(t *testing.T) {
	err := hintStart(fmt.Errorf("provisioning: %w", provision.ErrUnsafeInputStream))
	if !errors.Is(err, provision.ErrUnsafeInputStream) || !strings.Contains(err.Error(), "--migrate-inputs") {
		t.Fatalf("hint %v: want the error kept and --migrate-inputs named", err)
	}
}

func TestPartitionsConfig(t *testing.T) {
	cases := []struct {
		name         string
		env          map[string]string
		args         []string
		partitions   int
		migrateParts bool
	}{
		{name: "default"},
		{name: "flags", args: []string{"--partitions", "8", "--migrate-partitions"}, partitions: 8, migrateParts: true},
		{name: "variables", env: map[string]string{"JETFLOW_PARTITIONS": "-1", "JETFLOW_MIGRATE_PARTITIONS": "true"}, partitions: -1, migrateParts: true},
		{name: "flag wins", env: map[string]string{"JETFLOW_PARTITIONS": "4"}, args: []string{"--partitions", "32"}, partitions: 32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JETFLOW_PARTITIONS", c.env["JETFLOW_PARTITIONS"])
			t.Setenv("JETFLOW_MIGRATE_PARTITIONS", c.env["JETFLOW_MIGRATE_PARTITIONS"])
			var svc serviceConfig
			cmd := &cobra.Command{Use: "x"}
			svc.addFlags(cmd)
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			if err := svc.resolve(); err != nil || svc.Partitions != c.partitions || svc.MigrateParts != c.migrateParts {
				t.Fatalf("Partitions %d, MigrateParts %v, %v; want %d, %v", svc.Partitions, svc.MigrateParts, err, c.partitions, c.migrateParts)
			}
		})
	}
}

func TestHintStartNamesThePartitionFlag(t *testing.T) {
	err := hintStart(fmt.Errorf("provisioning: %w", provision.ErrPartitions))
	if !errors.Is(err, provision.ErrPartitions) || !strings.Contains(err.Error(), "--migrate-partitions") {
		t.Fatalf("hint %v: want the error kept and --migrate-partitions named", err)
	}
}
