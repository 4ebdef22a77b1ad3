package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
)

// TestAuditOfVerbs: a state-changing verb writes an audit entry naming
// its operator (--operator, else JETFLOW_OPERATOR), accepted or refused
// with why, and `jetflow audit` prints them, filtered by run and by who.
func TestAuditOfVerbs(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if err := f.Client.StartRun(ctx, "gate", "au-1", map[string]any{"wait": true}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "au-1", "waiting")

	if out, errOut, exit := verb(t, f, "pause", "au-1", "--reason", "provider down", "--operator", "ana"); exit != 0 {
		t.Fatalf("pause: exit %d\n%s%s", exit, out, errOut)
	}
	waitStatus(t, f, "au-1", "paused")
	if _, _, exit := verb(t, f, "pause", "au-1", "--operator", "ana"); exit == 0 {
		t.Fatal("a second pause was accepted")
	}
	if out, errOut, exit := runEnv(t, []string{"JETFLOW_OPERATOR=bob"}, "", "cancel", "au-1", "--reason", "duplicate", "--nats", f.URL()); exit != 0 {
		t.Fatalf("cancel: exit %d\n%s%s", exit, out, errOut)
	}

	out, errOut, exit := verb(t, f, "audit", "--run", "au-1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if exit != 0 || len(lines) != 3 {
		t.Fatalf("audit --run au-1: exit %d, want the two pauses and the cancel:\n%s%s", exit, out, errOut)
	}
	for i, want := range []string{
		"  ana  cli  pause  au-1  accepted  $ jetflow pause au-1 --nats " + f.URL() + " --operator ana --reason 'provider down'",
		"  ana  cli  pause  au-1  refused: run au-1 is already paused  $ jetflow pause au-1",
		"  bob  cli  cancel  au-1  accepted  $ jetflow cancel au-1",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("audit line %d:\n%s\nwant it to contain\n%s", i, lines[i], want)
		}
	}
	out, _, exit = verb(t, f, "audit", "--who", "BOB", "--json")
	var r client.AuditRecord
	if exit != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &r) != nil || r.Who != "bob" || r.Action != "cancel" || r.Reason != "duplicate" || r.Source != "cli" {
		t.Fatalf("audit --who BOB --json: exit %d\n%s", exit, out)
	}
	if out, errOut, exit := verb(t, f, "audit", "--run", "nobody"); exit != 0 || out != "" || !strings.Contains(errOut, "no audit entries match") {
		t.Fatalf("audit of nothing: exit %d\n%s%s", exit, out, errOut)
	}
}

// TestConsoleAuthAndAudit: `jetflow console` with a token refuses the
// API without it, acts with it, and the action's entry, naming the
// token's identity, is what `jetflow audit` prints; with actions on an
// address others can reach and no authentication, it does not start.
func TestConsoleAuthAndAudit(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if _, errOut, exit := runEnv(t, []string{"JETFLOW_CONSOLE_ACTIONS=true"}, "", "console", "--nats", f.URL(), "--http", "0.0.0.0:0"); exit != 2 ||
		!strings.Contains(errOut, "--console-token") || !strings.Contains(errOut, "--console-forward-auth-header") {
		t.Fatalf("console with actions on 0.0.0.0 without auth: exit %d\n%s", exit, errOut)
	}
	if err := f.Client.StartRun(ctx, "gate", "au-2", map[string]any{"wait": true}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "au-2", "waiting")

	const token = "a-console-token-for-the-test"
	first, errOut := startLines(t, []string{"JETFLOW_CONSOLE_TOKEN=" + token}, "console", "--nats", f.URL(), "--http", "127.0.0.1:0", "--console-actions")
	var base string
	select {
	case l := <-first:
		const suffix = "/console/ (actions enabled, token authentication)"
		if !strings.HasPrefix(l, "console: http://127.0.0.1:") || !strings.HasSuffix(l, suffix) {
			t.Fatalf("printed %q", l)
		}
		base = strings.TrimSuffix(strings.TrimPrefix(l, "console: "), "/ (actions enabled, token authentication)")
	case <-time.After(daemonBound):
		t.Fatalf("console printed no URL:\n%s", errOut.String())
	}
	call := func(method, path, auth string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(`{"reason":"from the console"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Jetflow-Console", "1")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := call(http.MethodGet, "/api/runs", ""); code != http.StatusUnauthorized {
		t.Fatalf("runs without the token: %d %s", code, body)
	}
	if code, body := call(http.MethodPost, "/api/runs/au-2/pause", "wrong-"+token); code != http.StatusUnauthorized {
		t.Fatalf("pause with a wrong token: %d %s", code, body)
	}
	if code, body := call(http.MethodPost, "/api/runs/au-2/pause", token); code != http.StatusAccepted {
		t.Fatalf("pause with the token: %d %s", code, body)
	}
	waitStatus(t, f, "au-2", "paused")
	out, stderr, exit := verb(t, f, "audit", "--run", "au-2")
	if exit != 0 || strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, "  token  console 127.0.0.1:") || !strings.Contains(out, "  pause  au-2  accepted  $ jetflow pause au-2 --reason 'from the console'") {
		t.Fatalf("audit of the console's pause: exit %d\n%s%s", exit, out, stderr)
	}
}

// TestAuditFollow: `jetflow audit --follow` prints an entry written after
// it started.
func TestAuditFollow(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	lines, errOut := startLines(t, nil, "audit", "--follow", "--nats", f.URL())
	// The task pause is written while audit follows: whether it is read in
	// the first pass or by a later look, it is printed once.
	if out, errOut, exit := runEnv(t, []string{"JETFLOW_OPERATOR=carla"}, "", "task", "pause", "echo@1", "--nats", f.URL()); exit != 0 {
		t.Fatalf("task pause: exit %d\n%s%s", exit, out, errOut)
	}
	select {
	case l := <-lines:
		if !strings.Contains(l, "  carla  cli  task-pause  task echo@1  accepted  $ jetflow task pause echo@1") {
			t.Fatalf("followed %q", l)
		}
	case <-time.After(verbBound):
		t.Fatalf("audit --follow printed nothing:\n%s", errOut.String())
	}
	if _, _, exit := verb(t, f, "task", "resume", "echo@1"); exit != 0 {
		t.Fatal("task resume failed")
	}
	select {
	case l := <-lines:
		if !strings.Contains(l, "  cli  task-resume  task echo@1  accepted") {
			t.Fatalf("followed %q", l)
		}
	case <-time.After(verbBound):
		t.Fatalf("audit --follow printed no second entry:\n%s", errOut.String())
	}
}

// TestServeRefusesExposedActions: serve with --console-actions on an
// address others can reach and no console authentication exits 2 before
// starting anything, naming the flags; with a token it starts.
func TestServeRefusesExposedActions(t *testing.T) {
	t.Parallel()
	_, errOut, exit := runEnv(t, nil, "", "serve", "--ephemeral", "--listen", "127.0.0.1:-1", "--http", "0.0.0.0:0", "--console-actions")
	if exit != 2 || !strings.Contains(errOut, "not a loopback address") || !strings.Contains(errOut, "--console-token, --console-basic or --console-forward-auth-header") {
		t.Fatalf("serve with exposed actions: exit %d\n%s", exit, errOut)
	}
	_, errOut, exit = runEnv(t, []string{"JETFLOW_CONSOLE_BASIC=ana"}, "", "serve", "--ephemeral", "--listen", "127.0.0.1:-1", "--http", "127.0.0.1:0")
	if exit != 2 || !strings.Contains(errOut, "--console-basic (JETFLOW_CONSOLE_BASIC)") {
		t.Fatalf("serve with a bad --console-basic: exit %d\n%s", exit, errOut)
	}
}
