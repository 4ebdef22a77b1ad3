package cli

import (
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/payload"
)

// TestConnConfigPrecedence: a flag given wins over its variable, which
// wins over the default; a bad variable is only an error when it is used.
func TestConnConfigPrecedence(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		want    connConfig
		wantErr string
	}{
		{name: "defaults", want: connConfig{Prefix: "jetflow", Timeout: defaultTimeout}},
		{
			name: "env", env: map[string]string{"JETFLOW_NATS_URL": "nats://a:1", "JETFLOW_PREFIX": "p", "JETFLOW_TIMEOUT": "3s", "JETFLOW_NATS_USER": "u", "JETFLOW_NATS_PASSWORD": "pw"},
			want: connConfig{URL: "nats://a:1", Prefix: "p", Timeout: 3 * time.Second, User: "u", Password: "pw"},
		},
		{
			name: "flags win", env: map[string]string{"JETFLOW_NATS_URL": "nats://a:1", "JETFLOW_TIMEOUT": "3s"}, args: []string{"--nats", "nats://b:2", "--timeout", "4s"},
			want: connConfig{URL: "nats://b:2", Prefix: "jetflow", Timeout: 4 * time.Second},
		},
		{name: "empty variable is unset", env: map[string]string{"JETFLOW_PREFIX": ""}, want: connConfig{Prefix: "jetflow", Timeout: defaultTimeout}},
		{
			name: "bad variable overridden", env: map[string]string{"JETFLOW_TIMEOUT": "x"}, args: []string{"--timeout", "1s"},
			want: connConfig{Prefix: "jetflow", Timeout: time.Second},
		},
		{name: "bad variable", env: map[string]string{"JETFLOW_TIMEOUT": "x"}, wantErr: `environment variable JETFLOW_TIMEOUT="x": unable to parse duration: time: invalid duration "x" (the --timeout flag overrides it)`},
		{name: "negative timeout", args: []string{"--timeout", "-1s"}, wantErr: "--timeout (JETFLOW_TIMEOUT) must be positive, got -1s"},
		{name: "two kinds of credentials", args: []string{"--user", "u", "--nkey", "config_test.go"}, wantErr: "--creds, --nkey and --user"},
		{name: "key without cert", args: []string{"--tls-key", "config_test.go"}, wantErr: "--tls-cert and --tls-key"},
		{name: "payload threshold from env", env: map[string]string{"JETFLOW_PAYLOAD_THRESHOLD": "1000"}, want: connConfig{Prefix: "jetflow", Timeout: defaultTimeout, PayloadThreshold: 1000}},
		{name: "inbox prefix", args: []string{"--inbox-prefix", "_INBOX_jf"}, want: connConfig{Prefix: "jetflow", Timeout: defaultTimeout, Inbox: "_INBOX_jf"}},
		{name: "inbox prefix from env", env: map[string]string{"JETFLOW_INBOX_PREFIX": "tenant.a._INBOX"}, want: connConfig{Prefix: "jetflow", Timeout: defaultTimeout, Inbox: "tenant.a._INBOX"}},
		{name: "inbox prefix wildcard", args: []string{"--inbox-prefix", "_INBOX.>"}, wantErr: `--inbox-prefix (JETFLOW_INBOX_PREFIX) "_INBOX.>": it has the wildcard '>'`},
		{name: "inbox prefix star", env: map[string]string{"JETFLOW_INBOX_PREFIX": "_INBOX_*"}, wantErr: `--inbox-prefix (JETFLOW_INBOX_PREFIX) "_INBOX_*": it has the wildcard '*'`},
		{name: "inbox prefix space", args: []string{"--inbox-prefix", "_INBOX jf"}, wantErr: "white space"},
		{name: "inbox prefix tab", args: []string{"--inbox-prefix", "_INBOX\tjf"}, wantErr: "white space or a control character"},
		{name: "inbox prefix trailing dot", args: []string{"--inbox-prefix", "_INBOX_jf."}, wantErr: "token 2 is empty"},
		{name: "inbox prefix double dot", args: []string{"--inbox-prefix", "a..b"}, wantErr: "token 2 is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"JETFLOW_NATS_URL", "JETFLOW_PREFIX", "JETFLOW_TIMEOUT", "JETFLOW_NATS_USER", "JETFLOW_NATS_PASSWORD", "JETFLOW_INBOX_PREFIX", "JETFLOW_PAYLOAD_THRESHOLD"} {
				t.Setenv(k, c.env[k])
			}
			var conn connConfig
			cmd := &cobra.Command{Use: "x"}
			addConnFlags(cmd, &conn)
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			err := conn.resolve()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("resolve: %v; want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := conn
			got.flags, got.resolved, got.refused = nil, false, nil
			if c.want.PayloadThreshold == 0 {
				c.want.PayloadThreshold = payload.DefaultThreshold
			}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
			if _, err := conn.natsOptions(); err != nil {
				t.Errorf("natsOptions: %v", err)
			}
		})
	}
}

func TestRedactURLs(t *testing.T) {
	t.Parallel()
	got := redactURLs("nats://u:secret@h:1,nats://h2:2")
	if strings.Contains(got, "secret") || !strings.Contains(got, "nats://h2:2") {
		t.Errorf("redactURLs = %q", got)
	}
}

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"off": -1, "72h": 72 * time.Hour, "1s": time.Second, "168h0m0s": 168 * time.Hour} {
		if got, err := parseRetention(in); err != nil || got != want {
			t.Errorf("parseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "500ms", "-1h", "forever", "OFF"} {
		if _, err := parseRetention(in); err == nil || !strings.Contains(err.Error(), "--retention (JETFLOW_RETENTION)") {
			t.Errorf("parseRetention(%q) = %v, want a refusal naming the flag", in, err)
		}
	}
}

// TestJobRetentionFlag: --job-retention reads as --retention does and a
// bad value is refused naming its own flag.
func TestJobRetentionFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"off": -1, "24h": 24 * time.Hour, "168h0m0s": 168 * time.Hour} {
		if got, err := parseKeep(in, "--job-retention (JETFLOW_JOB_RETENTION)"); err != nil || got != want {
			t.Errorf("parseKeep(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "500ms", "never"} {
		if _, err := parseKeep(in, "--job-retention (JETFLOW_JOB_RETENTION)"); err == nil || !strings.Contains(err.Error(), "--job-retention (JETFLOW_JOB_RETENTION)") {
			t.Errorf("parseKeep(%q) = %v, want a refusal naming the flag", in, err)
		}
	}
}

// TestServiceFlagsHaveVariables: every flag of the long-running verbs
// names its environment variable in its help, and that variable is bound
// to that flag by a settings struct (applyEnv reads it), so that a
// container configures them all by environment, as the README promises.
func TestServiceFlagsHaveVariables(t *testing.T) {
	t.Parallel()
	bound := map[string]string{} // variable → flag, from the env and flag tags
	for _, cfg := range []any{connConfig{}, embedConfig{}, serviceConfig{}, secretConfig{}, consoleSettings{}, consoleAddr{}, execConfig{}, gatewaySettings{}, demoWorkersConfig{}} {
		typ := reflect.TypeOf(cfg)
		for i := range typ.NumField() {
			if key := typ.Field(i).Tag.Get("env"); key != "" {
				bound[key] = typ.Field(i).Tag.Get("flag")
			}
		}
	}
	named := regexp.MustCompile(`env (JETFLOW_[A-Z_]+)\)`)
	root := newRoot(streams{in: strings.NewReader(""), out: io.Discard, err: io.Discard})
	for _, path := range [][]string{{"serve"}, {"dispatcher"}, {"worker", "exec"}, {"demo", "workers"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			m := named.FindStringSubmatch(f.Usage)
			switch {
			case m == nil:
				t.Errorf("%s --%s names no environment variable in its help: %q", cmd.CommandPath(), f.Name, f.Usage)
			case bound[m[1]] != f.Name:
				t.Errorf("%s --%s names %s, which no settings struct binds to --%s (bound to %q)", cmd.CommandPath(), f.Name, m[1], f.Name, bound[m[1]])
			}
		})
	}
}

// TestWorkerExecVariables: worker exec reads its own settings from the
// environment, and a flag given wins.
func TestWorkerExecVariables(t *testing.T) {
	t.Setenv("JETFLOW_TASK", "notify@2")
	t.Setenv("JETFLOW_CONCURRENCY", "3")
	t.Setenv("JETFLOW_CREATE_CONSUMER", "true")
	t.Setenv("JETFLOW_DRAIN_TIMEOUT", "5s")
	var c execConfig
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().StringVar(&c.Task, "task", "", "")
	cmd.Flags().IntVar(&c.Concurrency, "concurrency", 16, "")
	cmd.Flags().BoolVar(&c.Create, "create-consumer", false, "")
	cmd.Flags().DurationVar(&c.Drain, "drain-timeout", 30*time.Second, "")
	if err := cmd.ParseFlags([]string{"--concurrency", "7"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(cmd.Flags(), &c); err != nil {
		t.Fatal(err)
	}
	if want := (execConfig{Task: "notify@2", Concurrency: 7, Create: true, Drain: 5 * time.Second}); c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
}
