package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
)

// serveArgs runs serve on free ports with a store that dies with it.
func serveArgs(extra ...string) []string {
	return append([]string{"serve", "--ephemeral", "--listen", "127.0.0.1:-1", "--http", "127.0.0.1:-1"}, extra...)
}

func TestServeEndpointsDeployAndWorkflows(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, nil, serveArgs()...)
	if !strings.HasPrefix(d.NATS, "nats://127.0.0.1:") || !strings.HasPrefix(d.HTTP, "http://127.0.0.1:") {
		t.Fatalf("printed nats %q, http %q", d.NATS, d.HTTP)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := d.get(path); code != 200 || body != "ok\n" {
			t.Errorf("GET %s: %d %q", path, code, body)
		}
	}
	code, metrics := d.get("/metrics")
	for _, want := range []string{"jetflow_dispatcher_runs_started_total 0", "go_goroutines ", "process_cpu_seconds_total "} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("GET /metrics: %d, no %q in:\n%.2000s", code, want, metrics)
		}
	}

	out, errOut, exit := runEnv(t, nil, "", "deploy", "order", "../../examples/order.json", "--nats", d.NATS)
	if exit != 0 {
		t.Fatalf("deploy: exit %d: %s%s", exit, out, errOut)
	}
	for _, want := range []string{
		"deployed order revision order-1\nhash ",
		"workers serve these tasks (consumers on stream jetflow_tasks):",
		"check-stock@1  jetflow.task.check-stock.1  task_check-stock_1\n",
		"ship@1         jetflow.task.ship.1         task_ship_1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out)
		}
	}

	// Deploying the same document again is a no-op with the same hash.
	out, _, exit = runEnv(t, nil, "", "deploy", "order", "../../examples/order.json", "--nats", d.NATS, "--json")
	var rep struct {
		Name, Revision, Hash string
		Tasks                []struct{ Task, Version, Subject, Consumer, Stream string }
	}
	if err := json.Unmarshal([]byte(out), &rep); exit != 0 || err != nil {
		t.Fatalf("deploy --json: exit %d, %v: %s", exit, err, out)
	}
	if rep.Name != "order" || rep.Revision != "order-1" || len(rep.Hash) != 64 || len(rep.Tasks) != 5 ||
		rep.Tasks[0].Subject != "jetflow.task.check-stock.1" || rep.Tasks[0].Consumer != "task_check-stock_1" {
		t.Errorf("deploy --json: %+v", rep)
	}

	out, _, exit = runEnv(t, nil, "", "workflows", "--nats", d.NATS)
	want := "NAME   REVISION  LATEST  HASH          DEPLOYED\norder  order-1   *       " + rep.Hash[:12] + "  "
	if exit != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("workflows: exit %d:\n%s\nwant prefix:\n%s", exit, out, want)
	}
	out, _, exit = runEnv(t, nil, "", "workflows", "--json", "--nats", d.NATS)
	var list []struct {
		Name, Latest string
		Revisions    []struct{ Revision, Hash string }
	}
	if err := json.Unmarshal([]byte(out), &list); exit != 0 || err != nil || len(list) != 1 ||
		list[0].Latest != "order-1" || list[0].Revisions[0].Hash != rep.Hash {
		t.Errorf("workflows --json: exit %d, %v: %s", exit, err, out)
	}

	// Revisions never change.
	changed := strings.Replace(readTestFile(t, "../../examples/order.json"), `"check-stock"`, `"check-stock-2"`, 1)
	out, _, exit = runEnv(t, nil, changed, "deploy", "order", "-", "--nats", d.NATS)
	if exit != 1 || !strings.HasPrefix(out, `JF0021 /revision revision "order-1" of workflow "order" is already deployed with a different document`) {
		t.Errorf("changed document under a deployed revision: exit %d, %q", exit, out)
	}

	if exit := d.interrupt(); exit != 0 {
		t.Errorf("serve exit %d after SIGINT:\n%s", exit, d.stderr)
	}
	if !strings.Contains(d.stderr.String(), "msg=stopped") {
		t.Errorf("serve did not log its stop:\n%s", d.stderr)
	}
}

// TestDeployRefusesBadDocuments needs no server: a document is checked
// before deploy connects.
func TestDeployRefusesBadDocuments(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, doc, want string }{
		{"not JSON", `{"$workflow":`, "<stdin>:1:14: JF0021 '': workflow must be JSON: unexpected end of JSON input\n"},
		{
			"bad guard", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"choose":[{"guard":{"$nope":1},"to":"b"}],"otherwise":"b"},"b":{"final":true}}}`,
			"<stdin>:1:84: JF0007 /states/a/choose/0/guard/$nope: statechart guard failed to compile: JQ0002 unknown operator '$nope' (did you mean '$some'?) [reference path /transitions/0/guard]\n",
		},
		{
			"task name unfit for a subject", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"in c","version":"1"},"then":"b"},"b":{"final":true}}}`,
			"<stdin>:1:64: JF0021 /states/a/work: invalid name: task name \"in c\" has white space",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, exit := runEnv(t, nil, c.doc, "deploy", "w", "-", "--nats", "nats://127.0.0.1:1")
			if exit != 1 || !strings.HasPrefix(out, c.want) || strings.Count(out, "\n") != 1 {
				t.Errorf("exit %d, %q (stderr %q); want exit 1, %q", exit, out, errOut, c.want)
			}
		})
	}
}

// TestDeployRefusalAsJSON gives a refused document as validate --json
// does: the reference's code and path, and where the author's text is wrong.
func TestDeployRefusalAsJSON(t *testing.T) {
	t.Parallel()
	doc := `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"t","version":"1"}},"b":{"final":true}}}`
	out, errOut, exit := runEnv(t, nil, doc, "deploy", "w", "-", "--json", "--nats", "nats://127.0.0.1:1")
	want := `{"error":{"code":"JF0021","path":"/states","message":"JF0021: undeclared state 'undefined' in this scope at /states",` +
		`"line":1,"column":59,"source_path":"/states/a/then","reason":"missing 'then': name the state to go to","hint":"states in this scope: a, b"}}` + "\n"
	if exit != 1 || out != want {
		t.Errorf("exit %d (stderr %q)\n got %s\nwant %s", exit, errOut, out, want)
	}
}

// TestDispatcherJoinsServe runs a dispatcher against a separate serve,
// then takes NATS away from it.
func TestDispatcherJoinsServe(t *testing.T) {
	t.Parallel()
	srv := startDaemon(t, nil, serveArgs()...)
	disp := startDaemon(t, nil, "dispatcher", "--nats", srv.NATS, "--http", "127.0.0.1:-1", "--drain-timeout", "1s", "--log-format", "json")
	if disp.NATS != srv.NATS {
		t.Errorf("dispatcher printed nats %q, want %q", disp.NATS, srv.NATS)
	}
	if code, body := disp.get("/readyz"); code != 200 {
		t.Errorf("dispatcher /readyz: %d %q", code, body)
	}
	if _, m := disp.get("/metrics"); !strings.Contains(m, "jetflow_dispatcher_messages_total") && !strings.Contains(m, "jetflow_dispatcher_runs_started_total") {
		t.Errorf("dispatcher /metrics has no dispatcher metrics:\n%.2000s", m)
	}
	for _, line := range strings.Split(strings.TrimSpace(disp.stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("--log-format json wrote %q", line)
		}
	}

	if exit := srv.interrupt(); exit != 0 {
		t.Fatalf("serve exit %d:\n%s", exit, srv.stderr)
	}
	natstest.WaitFor(t, 10*time.Second, "dispatcher unhealthy without NATS", func() error {
		code, body := disp.get("/healthz")
		if code != 503 || !strings.HasPrefix(body, "nats connection is ") {
			return fmt.Errorf("/healthz %d %q", code, body)
		}
		return nil
	})
	// Its consumer cannot drain without NATS: it gives up, says why, exits.
	if exit := disp.interrupt(); exit != 2 || !strings.Contains(disp.stderr.String(), "is NATS reachable?") {
		t.Errorf("dispatcher without NATS: exit %d:\n%s", exit, disp.stderr)
	}
}

// TestServeKeepsDataAcrossRestarts configures serve from the environment
// only and restarts it on the same store.
func TestServeKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	env := []string{
		"JETFLOW_DATA=" + dir, "JETFLOW_LISTEN=127.0.0.1:-1", "JETFLOW_HTTP=127.0.0.1:-1", "JETFLOW_PREFIX=envp",
		"JETFLOW_PROVISION=false",
	} // the dispatcher's setting: serve always provisions
	d := startDaemon(t, env, "serve")
	if d.Data != dir {
		t.Errorf("printed data %q, want %q", d.Data, dir)
	}
	client := []string{"JETFLOW_NATS_URL=" + d.NATS, "JETFLOW_PREFIX=envp"}
	out, errOut, exit := runEnv(t, client, "", "deploy", "order", "../../examples/order.json")
	if exit != 0 || !strings.Contains(out, "envp.task.ship.1") {
		t.Fatalf("deploy with env: exit %d: %s%s", exit, out, errOut)
	}
	// The flag wins over the variable: nothing is provisioned under "other".
	_, errOut, exit = runEnv(t, client, "", "workflows", "--prefix", "other")
	if exit != 2 || !strings.Contains(errOut, `nothing provisioned with prefix "other"`) {
		t.Errorf("workflows --prefix other: exit %d, %q", exit, errOut)
	}
	if exit := d.interrupt(); exit != 0 {
		t.Fatalf("serve exit %d:\n%s", exit, d.stderr)
	}

	d = startDaemon(t, env, "serve", "--http", "off")
	if d.HTTP != "" {
		t.Errorf("--http off still serves HTTP at %s", d.HTTP)
	}
	out, errOut, exit = runEnv(t, []string{"JETFLOW_NATS_URL=nats://127.0.0.1:1", "JETFLOW_PREFIX=envp"}, "", "workflows", "--nats", d.NATS)
	if exit != 0 || !strings.Contains(out, "order  order-1") {
		t.Errorf("workflows after restart: exit %d: %s%s", exit, out, errOut)
	}
	if exit := d.interrupt(); exit != 0 {
		t.Fatalf("serve exit %d:\n%s", exit, d.stderr)
	}
}

// TestServeRefusesADataDirInUse runs serve twice on one --data: the second
// names the first and exits before it binds a port or opens the store; a
// SIGKILLed serve does not block the next one.
func TestServeRefusesADataDirInUse(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	first := startDaemon(t, nil, "serve", "--data", dir, "--listen", "127.0.0.1:-1", "--http", "127.0.0.1:-1")
	natsAddr := strings.TrimPrefix(first.NATS, "nats://")
	httpAddr := strings.TrimPrefix(first.HTTP, "http://")

	// The same ports too, as when serve is run twice with the defaults:
	// the directory is what the error is about.
	_, errOut, exit := runEnv(t, nil, "", "serve", "--data", dir, "--listen", natsAddr, "--http", httpAddr)
	want := fmt.Sprintf("jetflow: data directory %s is in use by jetflow pid %d (nats %s, http %s); stop it or pass another --data (JETFLOW_DATA)\n",
		dir, first.cmd.Process.Pid, natsAddr, httpAddr)
	if exit != 2 || errOut != want {
		t.Errorf("second serve: exit %d, stderr\n%s\nwant exit 2 and\n%s", exit, errOut, want)
	}

	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
	case <-time.After(daemonBound):
		t.Fatalf("serve still running %s after SIGKILL", daemonBound)
	}
	next := startDaemon(t, nil, "serve", "--data", dir, "--listen", "127.0.0.1:-1", "--http", "off")
	if exit := next.interrupt(); exit != 0 {
		t.Fatalf("serve after a killed one: exit %d:\n%s", exit, next.stderr)
	}
}

// TestBadConfigurationNamesItsSource checks that every refused setting
// names its flag or environment variable; none of these starts a server.
func TestBadConfigurationNamesItsSource(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() }) // the subtests run after this function returns
	missing := filepath.Join(t.TempDir(), "missing.creds")
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"bad flag value", nil, []string{"workflows", "--timeout", "soon"}, `invalid argument "soon" for "--timeout" flag`},
		{"bad env value", []string{"JETFLOW_TIMEOUT=soon"}, []string{"workflows"}, `environment variable JETFLOW_TIMEOUT="soon"`},
		{"flag overrides a bad env value", []string{"JETFLOW_TIMEOUT=soon"}, []string{"workflows", "--timeout", "2s", "--nats", "nats://127.0.0.1:1"}, "connecting to nats://127.0.0.1:1"},
		{"zero timeout", nil, []string{"workflows", "--timeout", "0s"}, "--timeout (JETFLOW_TIMEOUT) must be positive"},
		{"bad prefix", []string{"JETFLOW_PREFIX=a.b"}, []string{"workflows"}, "--prefix (JETFLOW_PREFIX)"},
		{"missing creds file", nil, []string{"workflows", "--creds", missing}, "--creds (JETFLOW_NATS_CREDS)"},
		{"cert without key", nil, []string{"workflows", "--tls-cert", "../../README.md"}, "--tls-cert and --tls-key"},
		{"password without user", []string{"JETFLOW_NATS_PASSWORD=x"}, []string{"workflows"}, "--password (JETFLOW_NATS_PASSWORD) needs --user"},
		{"log format", nil, serveArgs("--log-format", "xml"), "--log-format (JETFLOW_LOG_FORMAT) must be text or json"},
		{"log level from env", []string{"JETFLOW_LOG_LEVEL=loud"}, serveArgs(), "--log-level (JETFLOW_LOG_LEVEL)"},
		{"replicas from env", []string{"JETFLOW_REPLICAS=three"}, serveArgs(), `environment variable JETFLOW_REPLICAS="three"`},
		{"replicas on one node", nil, serveArgs("--replicas", "3"), "--replicas (JETFLOW_REPLICAS) 3 needs a cluster"},
		{"http not host:port", nil, []string{"serve", "--ephemeral", "--http", "7070"}, "--http (JETFLOW_HTTP)"},
		{"http port busy", nil, []string{"serve", "--ephemeral", "--listen", "127.0.0.1:-1", "--http", busy.Addr().String()}, "--http (JETFLOW_HTTP)"},
		{"listen with --nats", nil, []string{"serve", "--nats", "nats://127.0.0.1:1", "--listen", "127.0.0.1:-1"}, "--listen configures the embedded nats-server"},
		{"fsync and a sync interval", []string{"JETFLOW_SYNC_INTERVAL=1s"}, []string{"serve", "--ephemeral", "--fsync"}, "--fsync and --sync-interval (JETFLOW_FSYNC, JETFLOW_SYNC_INTERVAL) are alternatives"},
		{"negative sync interval", nil, []string{"serve", "--ephemeral", "--sync-interval", "-1s"}, "--sync-interval (JETFLOW_SYNC_INTERVAL) is -1s"},
		{"sync interval with --nats", nil, []string{"serve", "--nats", "nats://127.0.0.1:1", "--sync-interval", "1s"}, "--sync-interval configures the embedded nats-server"},
		{"concurrency", nil, []string{"dispatcher", "--concurrency", "0"}, "--concurrency (JETFLOW_CONCURRENCY) must be positive"},
		{"otlp over grpc", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, serveArgs(), `OTEL_EXPORTER_OTLP_PROTOCOL="grpc": jetflow exports OTLP over http/protobuf only`},
		{"unknown traces exporter", []string{"OTEL_TRACES_EXPORTER=zipkin"}, []string{"worker", "exec", "--task", "t@1", "--nats", "nats://127.0.0.1:1", "--", "true"}, `OTEL_TRACES_EXPORTER="zipkin"`},
		{"no server", nil, []string{"workflows", "--nats", "nats://127.0.0.1:1"}, "is `jetflow serve` running there?"},
		{"bad workflow name", nil, []string{"deploy", "a.b", "../../examples/order.json"}, "NAME: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, exit := runEnv(t, c.env, "", c.args...)
			if exit != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("jetflow %s: exit %d, stderr %q (stdout %q); want exit 2 and %q", strings.Join(c.args, " "), exit, errOut, out, c.want)
			}
		})
	}
}

func TestServeHelpNamesEnvironment(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"serve", "dispatcher", "deploy", "workflows"} {
		out, _, exit := runEnv(t, nil, "", verb, "--help")
		if exit != 0 || !strings.Contains(out, "JETFLOW_NATS_URL") || !strings.Contains(out, "JETFLOW_PREFIX") {
			t.Errorf("%s --help: exit %d:\n%s", verb, exit, out)
		}
	}
}

func readTestFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
