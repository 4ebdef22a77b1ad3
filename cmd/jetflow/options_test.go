package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
)

// execWorker runs `jetflow worker exec` serving cat@1 with `sh -c cat`
// until the test ends.
func execWorker(t *testing.T, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	cmd := exec.CommandContext(ctx, binary, append(append([]string{"worker", "exec"}, args...), "--task", "cat@1", "--", "sh", "-c", "cat")...)
	cmd.Env = testEnv(env)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer cancel()
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker exec: %v\n%s", err, logs.String())
		}
	})
}

// waitLog waits until d has logged a line containing text.
func waitLog(t *testing.T, d *daemon, text string) {
	t.Helper()
	natstest.WaitFor(t, daemonBound, "log line "+text, func() error {
		if !strings.Contains(d.stderr.String(), text) {
			return errors.New("not yet")
		}
		return nil
	})
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTokenSecretAcrossDispatchers runs serve with a configured token
// secret and --ack-wait, then dispatchers that disagree with it (none, or
// another secret) exit 2 at start saying how to fix it, one with the same
// secret from a file runs, and replay needs the secret too. No log line
// shows the secret; they show its fingerprint.
func TestTokenSecretAcrossDispatchers(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{0x3c}, token.SecretSize)
	hexSecret := hex.EncodeToString(secret)
	signer, err := token.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	fp := signer.Fingerprint()
	withSecret := []string{"JETFLOW_TOKEN_SECRET=" + hexSecret}
	srv := startDaemon(t, withSecret, serveArgs("--http", "off", "--ack-wait", "5s")...)
	waitLog(t, srv, "jetflow serve running")
	if got := srv.stderr.String(); !strings.Contains(got, "fingerprint "+fp) || !strings.Contains(got, "--ack-wait is shorter than") {
		t.Errorf("serve log lacks the secret's fingerprint or the short --ack-wait warning:\n%s", got)
	}
	nc, err := nats.Connect(srv.NATS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names := subjects.Must("")
	ackWait := func() time.Duration {
		t.Helper()
		// Partition 0's consumer: every partition's has the same AckWait.
		var c jetstream.Consumer
		natstest.WaitFor(t, time.Minute, "a dispatcher consumer of partition 0", func() (err error) {
			c, err = js.Consumer(context.Background(), names.InputStream(), names.PartitionConsumer(0))
			return err
		})
		return c.CachedInfo().Config.AckWait
	}
	if got := ackWait(); got != 5*time.Second {
		t.Errorf("the dispatchers' consumer waits %v for acks, want --ack-wait 5s", got)
	}

	join := []string{"dispatcher", "--nats", srv.NATS, "--http", "off", "--drain-timeout", "2s"}
	for _, c := range []struct {
		name string
		env  []string
		want []string
	}{
		{"without a secret", nil, []string{"token secret disagrees with the deployment's", "configured with a secret (fingerprint " + fp + ")", "--token-secret"}},
		{"with another secret", []string{"JETFLOW_TOKEN_SECRET=" + strings.Repeat("ab", token.SecretSize)}, []string{"configured with another secret (fingerprint " + fp, "--token-secret-previous"}},
	} {
		_, errOut, exit := runEnv(t, c.env, "", join...)
		for _, w := range c.want {
			if exit != 2 || !strings.Contains(errOut, w) {
				t.Errorf("dispatcher %s: exit %d, want 2 and %q in:\n%s", c.name, exit, w, errOut)
			}
		}
	}
	file := writeFile(t, "secret", hexSecret+"\n")
	disp := startDaemon(t, nil, append(join, "--token-secret-file", file, "--ack-wait", "6s")...)
	waitLog(t, disp, "jetflow dispatcher running")
	if got := disp.stderr.String(); !strings.Contains(got, "fingerprint "+fp) || !strings.Contains(got, "changes the AckWait all dispatchers share") {
		t.Errorf("dispatcher log lacks the fingerprint or the AckWait warning:\n%s", got)
	}
	// The partitions it takes are consumed with its AckWait.
	natstest.WaitFor(t, time.Minute, "a partition consumed with AckWait 6s", func() error {
		for p := range 16 {
			c, err := js.Consumer(context.Background(), names.InputStream(), names.PartitionConsumer(p))
			if err == nil && c.CachedInfo().Config.AckWait == 6*time.Second {
				return nil
			}
		}
		return errors.New("none")
	})

	client := []string{"--nats", srv.NATS}
	if out, errOut, exit := runEnv(t, nil, "", append([]string{"deploy", "cat", writeFile(t, "cat.json", catDoc)}, client...)...); exit != 0 {
		t.Fatalf("deploy: exit %d: %s%s", exit, out, errOut)
	}
	execWorker(t, nil, client...)
	if out, errOut, exit := runEnv(t, nil, "", append([]string{"start", "cat", "--id", "sec-1", "--wait"}, client...)...); exit != 0 {
		t.Fatalf("start --wait: exit %d: %s%s\nserve:\n%s", exit, out, errOut, srv.stderr)
	}
	if _, errOut, exit := runEnv(t, nil, "", append([]string{"replay", "sec-1"}, client...)...); exit != 2 || !strings.Contains(errOut, "--token-secret") {
		t.Errorf("replay without the secret: exit %d, %q", exit, errOut)
	}
	if out, errOut, exit := runEnv(t, withSecret, "", append([]string{"replay", "sec-1"}, client...)...); exit != 0 || !strings.Contains(out, "state equal") {
		t.Errorf("replay with the secret: exit %d: %s%s", exit, out, errOut)
	}

	if exit := disp.interrupt(); exit != 0 {
		t.Errorf("dispatcher exit %d:\n%s", exit, disp.stderr)
	}
	if exit := srv.interrupt(); exit != 0 {
		t.Errorf("serve exit %d:\n%s", exit, srv.stderr)
	}
	for name, log := range map[string]string{"serve": srv.stderr.String(), "dispatcher": disp.stderr.String()} {
		if strings.Contains(log, hexSecret) || strings.Contains(strings.ToLower(log), hexSecret[:16]) {
			t.Errorf("the %s log shows the secret", name)
		}
	}
}

// TestInboxPrefix joins a NATS server whose user "jf" may subscribe only
// to its own inboxes (_INBOX_jf.>) and the status announcements, as
// docs/security/nats-server.conf grants: without --inbox-prefix a client
// verb fails and says to set it; with it (flag or variable) deploy, a
// worker and start --wait all work.
func TestInboxPrefix(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limited := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{">"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX_jf.>", "jetflow.status.>"}},
	}
	ns, err := embedded.Start(ctx, embedded.Config{Listen: "127.0.0.1:-1", Logger: slog.New(slog.DiscardHandler), Customize: func(o *server.Options) {
		o.Users = []*server.User{{Username: "op", Password: "op-pw"}, {Username: "jf", Password: "jf-pw", Permissions: limited}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Stop(context.Background()) })
	url := ns.ClientURL()
	startDaemon(t, []string{"JETFLOW_NATS_PASSWORD=op-pw"}, "serve", "--nats", url, "--user", "op", "--http", "off")

	jf := []string{"JETFLOW_NATS_URL=" + url, "JETFLOW_NATS_USER=jf", "JETFLOW_NATS_PASSWORD=jf-pw"}
	_, errOut, exit := runEnv(t, jf, "", "workflows", "--timeout", "2s")
	if exit != 2 || !strings.Contains(errOut, "--inbox-prefix or JETFLOW_INBOX_PREFIX") || !strings.Contains(errOut, `"_INBOX.`) {
		t.Errorf("workflows without --inbox-prefix: exit %d, want 2 and a hint naming --inbox-prefix:\n%s", exit, errOut)
	}
	out, errOut, exit := runEnv(t, jf, "", "deploy", "cat", writeFile(t, "cat.json", catDoc), "--inbox-prefix", "_INBOX_jf")
	if exit != 0 {
		t.Fatalf("deploy --inbox-prefix: exit %d: %s%s", exit, out, errOut)
	}
	withPrefix := append(jf, "JETFLOW_INBOX_PREFIX=_INBOX_jf")
	execWorker(t, withPrefix)
	if out, errOut, exit := runEnv(t, withPrefix, "", "start", "cat", "--id", "inbox-1", "--wait"); exit != 0 {
		t.Fatalf("start --wait with JETFLOW_INBOX_PREFIX: exit %d: %s%s", exit, out, errOut)
	}
	if out, errOut, exit := runEnv(t, withPrefix, "", "status", "inbox-1"); exit != 0 || !strings.Contains(out, "done") {
		t.Errorf("status: exit %d: %s%s", exit, out, errOut)
	}
}
