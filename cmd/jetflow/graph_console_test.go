package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestGraphFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want []string
		exit int
	}{
		{"mermaid", []string{"graph", "-"}, []string{"stateDiagram-v2\n", "[*] --> s1\n", "s3 --> s2 : {'$gt':['$.context.data',2]}"}, 0},
		{"dot", []string{"graph", "-", "--format", "dot"}, []string{`digraph "r1" {`, `"/states/a" -> "/states/c";`}, 0},
		{"svg", []string{"graph", "-", "--format", "svg"}, []string{`<svg xmlns="http://www.w3.org/2000/svg"`, `<style>`, `data-id="/states/a"`}, 0},
		{"dag", []string{"graph", "-", "--state", "a"}, []string{"flowchart TB\n", `n2["task<br/>inc@1"]`}, 0},
		{"dag by id", []string{"graph", "-", "--state", "/states/a", "--format", "dot"}, []string{`"task" [label="task\ninc@1"];`}, 0},
		{"bad format", []string{"graph", "-", "--format", "png"}, []string{`--format: graph: unknown format "png" (want mermaid, dot or svg)`}, 2},
		{"not a work state", []string{"graph", "-", "--state", "c"}, []string{`--state "c" is not a work state (work states: /states/a)`}, 2},
		{"nothing named", []string{"graph"}, []string{"name a workflow document (FILE), a deployed workflow (NAME) or a run (--run RUN)"}, 2},
		{"bad document", []string{"graph", "-"}, []string{"<stdin>:1:2: JF0021 '': workflow must be JSON: unexpected end of JSON input: expected a member name in double quotes"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdin := orderDoc
			if c.name == "bad document" {
				stdin = "{"
			}
			out, exit := jetflow(t, stdin, c.args...)
			if exit != c.exit {
				t.Errorf("exit %d, want %d: %s", exit, c.exit, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestGraphDeployedAndRun draws a deployed workflow by name and a run
// marked on its workflow.
func TestGraphDeployedAndRun(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	out, errOut, exit := verb(t, f, "graph", "gate", "--format", "dot")
	if exit != 0 || !strings.Contains(out, `digraph "gate g1" {`) || !strings.Contains(out, `"/states/gate" -> "/states/end" [label="go"];`) {
		t.Fatalf("graph gate: exit %d\n%s%s", exit, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if err := f.Client.StartRun(ctx, "gate", "g-1", map[string]any{"wait": true}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "g-1", "waiting")
	out, errOut, exit = verb(t, f, "graph", "--run", "g-1")
	for _, want := range []string{`state "gate (active, visits 1)" as s2`, "class s2 active", "class s4 visited"} {
		if exit != 0 || !strings.Contains(out, want) {
			t.Errorf("graph --run: exit %d, no %q in\n%s%s", exit, want, out, errOut)
		}
	}
	out, errOut, exit = verb(t, f, "graph", "--run", "g-1", "--state", "work")
	if exit != 0 || !strings.Contains(out, "class n1 done") {
		t.Errorf("graph --run --state work: exit %d\n%s%s", exit, out, errOut)
	}
	if _, errOut, exit = verb(t, f, "graph", "nope"); exit != 2 || !strings.Contains(errOut, "workflow not found") {
		t.Errorf("graph of an undeployed name: exit %d, %s", exit, errOut)
	}
}

// TestConsoleVerb serves the console against a deployment and reads its
// API, then stops it with Ctrl-C.
func TestConsoleVerb(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if err := f.Client.StartRun(ctx, "gate", "c-1", map[string]any{"wait": true}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "c-1", "waiting")

	cmd := exec.Command(binary, "console", "--nats", f.URL(), "--http", "127.0.0.1:0")
	cmd.Env = testEnv([]string{"JETFLOW_CONSOLE_ACTIONS=true"})
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut lockedBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var base string
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "console: http://127.0.0.1:") || !strings.HasSuffix(l, "/console/ (actions enabled)") {
			t.Fatalf("printed %q", l)
		}
		base = strings.TrimSuffix(strings.TrimPrefix(l, "console: "), " (actions enabled)")
	case <-time.After(daemonBound):
		_ = cmd.Process.Kill()
		t.Fatalf("console printed no URL:\n%s", errOut.String())
	}
	// The console answers before its index of the run bucket is loaded
	// ("loaded": false): ask until it is.
	var code int
	var body string
	var page struct {
		Runs   []struct{ ID, State string }
		Loaded bool
	}
	for deadline := time.Now().Add(daemonBound); ; {
		code, body = fetchURL(t, base+"api/runs?status=waiting")
		page.Loaded = false
		if err := json.Unmarshal([]byte(body), &page); err != nil || page.Loaded || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := json.Unmarshal([]byte(body), &page); code != 200 || err != nil || len(page.Runs) != 1 || page.Runs[0].ID != "c-1" {
		t.Errorf("GET api/runs: %d %v %s", code, err, body)
	}
	code, body = fetchURL(t, base+"api/overview")
	if code != 200 || !strings.Contains(body, `"actions":true`) {
		t.Errorf("GET api/overview: %d %s", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("console exit: %v\n%s", err, errOut.String())
		}
	case <-time.After(daemonBound):
		_ = cmd.Process.Kill()
		t.Fatalf("console did not stop on SIGINT:\n%s", errOut.String())
	}
}

// TestServeMountsConsole: serve's HTTP endpoint serves the console, read
// only unless asked, and sends / to it.
func TestServeMountsConsole(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, nil, serveArgs()...)
	code, body := d.get("/console/api/overview")
	if code != 200 || !strings.Contains(body, `"actions":false`) {
		t.Errorf("GET /console/api/overview: %d %s", code, body)
	}
	code, body = d.get("/")
	if code != 200 || !strings.Contains(body, `data-base="/console"`) {
		t.Errorf("GET / (redirected): %d %.300s", code, body)
	}
	if code := d.interrupt(); code != 0 {
		t.Errorf("serve exit %d", code)
	}
	d = startDaemon(t, nil, serveArgs("--console-actions")...)
	if code, body := d.get("/console/api/overview"); code != 200 || !strings.Contains(body, `"actions":true`) {
		t.Errorf("with --console-actions: %d %s", code, body)
	}
	d = startDaemon(t, []string{"JETFLOW_CONSOLE_ACTIONS=true"}, serveArgs("--console-actions=false")...)
	if code, body := d.get("/console/api/overview"); code != 200 || !strings.Contains(body, `"actions":false`) {
		t.Errorf("--console-actions=false over JETFLOW_CONSOLE_ACTIONS=true: %d %s", code, body)
	}
}
