package exec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/worker"
	"github.com/jetflow/jetflow/worker/exec"
	"github.com/jetflow/jetflow/worker/workertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func handler(t *testing.T, opts exec.Options, cmd ...string) worker.Handler {
	t.Helper()
	h, err := exec.Handler(cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sh(t *testing.T, script string) worker.Handler {
	t.Helper()
	return handler(t, exec.Options{}, "sh", "-c", script)
}

func TestProgramReceivesTheInvocation(t *testing.T) {
	t.Parallel()
	out, err := workertest.Run(t.Context(), handler(t, exec.Options{}, "cat"), worker.Invocation{
		Run: "r1", Node: "n1", Attempt: 2, Input: json.RawMessage(`{"amount":5}`), With: json.RawMessage(`{"currency":"EUR"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var req exec.Request
	if err := json.Unmarshal(out, &req); err != nil {
		t.Fatal(err)
	}
	if req.Run != "r1" || req.Node != "n1" || req.Attempt != 2 || req.Delivery != 1 || req.Task != workertest.Task ||
		req.Activation != `["r1","/states/test",1]` || string(req.Input) != `{"amount":5}` || string(req.With) != `{"currency":"EUR"}` ||
		req.IdempotencyKey != `["[\"r1\",\"/states/test\",1]","n1"]` {
		t.Errorf("program received %s", out)
	}
	// Without a with, the program still finds the key, set to null.
	out, err = workertest.Run(t.Context(), handler(t, exec.Options{}, "cat"), worker.Invocation{})
	if err != nil || !strings.Contains(string(out), `"with":null`) || !strings.Contains(string(out), `"input":null`) {
		t.Errorf("no-with request = %s, %v", out, err)
	}
}

func TestOutputs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script string
		out          string // want output, or
		errPart      string // want an error with this part and code
		code         string
	}{
		{"object", `echo '{"ok": true}'`, `{"ok":true}`, "", ""},
		{"null", `echo null`, `null`, "", ""},
		{"ignores stdin", `echo 7`, `7`, "", ""},
		{"logs on stderr are fine", `echo progress >&2; echo '"done"'`, `"done"`, "", ""},
		{"not json", `echo charged`, "", "stdout is not JSON", exec.CodeBadOutput},
		{"two values", `echo 1; echo 2`, "", "more than one JSON value", exec.CodeBadOutput},
		{"truncated", `printf '{"a":'`, "", "stdout is not JSON", exec.CodeBadOutput},
		{"nothing", `true`, "", "wrote nothing on stdout", exec.CodeBadOutput},
		{"exit status", `echo oops >&2; exit 3`, "", "exited with status 3: oops", "EXIT_3"},
		{"exit without stderr", `exit 1`, "", "(nothing on stderr)", "EXIT_1"},
		{"signal", `echo dying >&2; kill -9 $$`, "", "signal: killed: dying", exec.CodeKilled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := workertest.Run(t.Context(), sh(t, c.script), worker.Invocation{})
			if c.errPart == "" {
				if err != nil || string(out) != c.out {
					t.Fatalf("= %s, %v; want %s", out, err, c.out)
				}
				return
			}
			te := worker.WireError(err)
			if te == nil || !strings.Contains(te.Message, c.errPart) || te.Code != c.code || te.NonRetryable {
				t.Fatalf("= %s, %+v; want a retryable error with %q, code %q", out, te, c.errPart, c.code)
			}
		})
	}
}

func TestFailureReportsTheEndOfStderr(t *testing.T) {
	t.Parallel()
	script := `i=0; while [ $i -lt 400 ]; do echo "noise line $i" >&2; i=$((i+1)); done; echo "fatal: card declined" >&2; exit 2`
	_, err := workertest.Run(t.Context(), sh(t, script), worker.Invocation{})
	te := worker.WireError(err)
	if te == nil || te.Code != "EXIT_2" {
		t.Fatalf("error = %+v", te)
	}
	if !strings.HasSuffix(te.Message, "noise line 399\nfatal: card declined") || strings.Contains(te.Message, "noise line 1\n") {
		t.Errorf("message does not end with the stderr tail: %q", te.Message)
	}
	if len(te.Message) > exec.DefaultStderrTail+200 {
		t.Errorf("message is %d bytes, want about the %d byte tail", len(te.Message), exec.DefaultStderrTail)
	}
	// Whole lines only: the tail starts right after a newline.
	_, rest, _ := strings.Cut(te.Message, ": ...noise line ")
	if _, err := strconv.Atoi(strings.SplitN(rest, "\n", 2)[0]); err != nil {
		t.Errorf("the tail starts mid-line: %q", te.Message[:80])
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mirror syncBuffer
	h := handler(t, exec.Options{Dir: dir, Env: []string{"GREETING=hi"}, Stderr: &mirror},
		"sh", "-c", `echo "to stderr" >&2; printf '"%s %s"' "$GREETING" "$(pwd)"`)
	out, err := workertest.Run(t.Context(), h, worker.Invocation{})
	real, _ := filepath.EvalSymlinks(dir)
	if err != nil || (string(out) != fmt.Sprintf(`"hi %s"`, dir) && string(out) != fmt.Sprintf(`"hi %s"`, real)) {
		t.Errorf("= %s, %v", out, err)
	}
	if mirror.String() != "to stderr\n" {
		t.Errorf("stderr mirror got %q", mirror.String())
	}
	big := handler(t, exec.Options{MaxOutput: 1000}, "sh", "-c", `i=0; printf '"'; while [ $i -lt 300 ]; do printf 'xxxxxxxxxx'; i=$((i+1)); done; printf '"'`)
	if _, err := workertest.Run(t.Context(), big, worker.Invocation{}); err == nil || !strings.Contains(err.Error(), "stdout exceeds 1000 bytes") {
		t.Errorf("oversized stdout gave %v", err)
	}
	if _, err := exec.Handler(nil, exec.Options{}); err == nil {
		t.Error("an empty command was accepted")
	}
	if _, err := exec.Handler([]string{"jetflow-no-such-program"}, exec.Options{}); err == nil {
		t.Error("a missing program was accepted")
	}
}

func TestCancellationKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	ready := &signalWriter{ch: make(chan struct{})}
	// The program starts a grandchild that would outlive it, records its
	// pid, says it is ready on stderr and waits.
	h := handler(t, exec.Options{Stderr: ready}, "sh", "-c", `sleep 300 & echo $! > "$1"; echo ready >&2; wait`, "sh", pidFile)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		_, err := workertest.Run(ctx, h, worker.Invocation{})
		done <- err
	}()
	select {
	case <-ready.ch:
	case <-time.After(time.Minute):
		t.Fatal("the program never became ready")
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("worker stopping")
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("cancelled run returned %v, want the cancellation cause", err)
		}
	case <-time.After(exec.DefaultWaitDelay / 2):
		t.Fatal("cancelling did not end the run (is the grandchild holding stderr?)")
	}
	// The kill is delivered; the kernel finishes the exit asynchronously,
	// with nothing to wait on but the process table.
	deadline := time.Now().Add(5 * time.Second)
	for alive(grandchild) {
		if time.Now().After(deadline) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", grandchild))
			t.Fatalf("grandchild %d outlived the cancelled invocation: %s", grandchild, st)
		}
		<-time.After(5 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// signalWriter closes ch on the first write.
type signalWriter struct {
	once sync.Once
	ch   chan struct{}
}

func (s *signalWriter) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.ch) })
	return len(p), nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A program serves a task: the invocation arrives on stdin, the output
// leaves on stdout.
func ExampleHandler() {
	double, err := exec.Handler([]string{"sh", "-c", `echo '{"doubled": 42}'`}, exec.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := workertest.Run(context.Background(), double, worker.Invocation{Input: json.RawMessage(`21`)})
	fmt.Println(string(out), err)

	failing, _ := exec.Handler([]string{"sh", "-c", `echo "card declined" >&2; exit 4`}, exec.Options{})
	_, err = workertest.Run(context.Background(), failing, worker.Invocation{})
	te := worker.WireError(err)
	fmt.Println(te.Code, strings.Contains(te.Message, "exited with status 4: card declined"))
	// Output:
	// {"doubled":42} <nil>
	// EXIT_4 true
}
