package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemon is a long-running jetflow process (serve, dispatcher) started by
// a test, with the addresses it printed on standard output.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	NATS   string // the "nats: URL" line
	HTTP   string // the "http: URL" line
	Data   string // the "data: DIR" line
	stderr *lockedBuffer
	done   chan struct{}
	exit   int
}

// daemonBound bounds a daemon's start and its exit after a signal; a hang
// fails the test instead of the whole run.
const daemonBound = 30 * time.Second

// startDaemon runs jetflow with args and env (added to a environment
// without JETFLOW_ variables) until it has printed its NATS URL and, when
// it serves HTTP, its HTTP address. Cleanup interrupts it if it still runs.
func startDaemon(t *testing.T, env []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, stderr: &lockedBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(binary, args...)
	d.cmd.Env = testEnv(env)
	d.cmd.Stderr = d.stderr
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wantHTTP := !hasArg(args, "--http", "off") && !hasArg(args, "--http", "")
	ready := make(chan struct{})
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if signalled {
				continue // the test reads the fields now
			}
			key, val, _ := strings.Cut(sc.Text(), ": ")
			mu.Lock()
			switch key {
			case "nats":
				d.NATS = val
			case "http":
				d.HTTP = val
			case "data":
				d.Data = val
			}
			if d.NATS != "" && (d.HTTP != "" || !wantHTTP) {
				signalled = true
				close(ready)
			}
			mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		err := d.cmd.Wait()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			d.exit = ee.ExitCode()
		} else if err != nil {
			d.exit = -1
		}
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
			return
		default:
		}
		_ = d.cmd.Process.Signal(os.Interrupt)
		select {
		case <-d.done:
		case <-time.After(daemonBound):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
	select {
	case <-ready:
		mu.Lock()
		defer mu.Unlock()
		return d
	case <-d.done:
		t.Fatalf("jetflow %s exited %d before it was ready:\n%s", strings.Join(args, " "), d.exit, d.stderr)
	case <-time.After(daemonBound):
		t.Fatalf("jetflow %s not ready after %s:\n%s", strings.Join(args, " "), daemonBound, d.stderr)
	}
	return nil
}

// interrupt sends SIGINT and returns the exit status.
func (d *daemon) interrupt() int {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-d.done:
		return d.exit
	case <-time.After(daemonBound):
		d.t.Fatalf("no exit %s after SIGINT:\n%s", daemonBound, d.stderr)
		return -1
	}
}

// get fetches path from the daemon's HTTP endpoint.
func (d *daemon) get(path string) (int, string) {
	d.t.Helper()
	return fetchURL(d.t, d.HTTP+path)
}

func fetchURL(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// runEnv runs jetflow to completion with env added to a clean environment.
func runEnv(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), daemonBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = testEnv(env)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// testEnv is this process's environment without JETFLOW_ variables, with
// a private data home, plus env.
func testEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JETFLOW_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			out = append(out, kv)
		}
	}
	// A test that forgets --data or --ephemeral stays out of the user's
	// data directory: this one is removed with the built binary.
	out = append(out, "XDG_DATA_HOME="+filepath.Join(filepath.Dir(binary), "xdg"))
	return append(out, env...)
}

func hasArg(args []string, flag, value string) bool {
	for i, a := range args {
		if a == flag+"="+value || (a == flag && i+1 < len(args) && args[i+1] == value) {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer written by a process and read by a test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startLines starts the binary with args and env (testEnv's) and returns
// its standard output line by line (the channel closes when it ends) and
// its standard error; lines past 64 unread ones are dropped. The process
// is killed when the test ends.
func startLines(t *testing.T, env []string, args ...string) (<-chan string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = testEnv(env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut := &lockedBuffer{}
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads that far: keep the process writing
			}
		}
	}()
	return lines, errOut
}
