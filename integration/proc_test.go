package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
)

// The crash tests re-execute this test binary as a dispatcher process,
// configured through the environment.
const (
	roleEnv        = "JETFLOW_IT_ROLE"
	roleDispatcher = "dispatcher"
	urlEnv         = "JETFLOW_IT_URL"
	prefixEnv      = "JETFLOW_IT_PREFIX"
	// crashEnv is "point/kind": the process SIGKILLs itself at the first
	// step of an input of that kind reaching that crash point.
	crashEnv   = "JETFLOW_IT_CRASH"
	ackWaitEnv = "JETFLOW_IT_ACK_WAIT"
	// retentionEnv, when set, is the dispatcher's Config.Retention.
	retentionEnv = "JETFLOW_IT_RETENTION"
	// productionEnv set keeps the dispatcher's own defaults for the
	// inputs of unknown runs, instead of the tests' short wait.
	productionEnv = "JETFLOW_IT_PRODUCTION"
)

// dispatcherProcess is the main of a dispatcher process: it serves until
// its standard input closes or it gets SIGTERM, and prints "ready" once
// started and "crash POINT KIND RUN" just before killing itself.
func dispatcherProcess() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ackWait, _ := time.ParseDuration(os.Getenv(ackWaitEnv))
	cfg := dispatcher.Config{AckWait: ackWait, Logger: log, Jobs: bulkProcessConfig()}
	if os.Getenv(productionEnv) == "" {
		cfg = dispatcherConfig(cfg)
	}
	if r := os.Getenv(retentionEnv); r != "" {
		cfg.Retention, _ = time.ParseDuration(r)
	}
	if crash := os.Getenv(crashEnv); crash != "" {
		point, kind, _ := strings.Cut(crash, "/")
		cfg.CrashHook = func(p, runID, k string) error {
			if p == point && k == kind {
				fmt.Printf("crash %s %s %s\n", p, k, runID)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
			return nil
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f, err := fleet.Start(startCtx, fleet.Config{
		URL: os.Getenv(urlEnv), Prefix: os.Getenv(prefixEnv), SkipProvision: true,
		Dispatcher: &cfg, Logger: log,
	})
	if err != nil {
		log.Error("dispatcher process: start", "error", err)
		return 1
	}
	fmt.Println("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	<-ctx.Done()
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	if err := f.Stop(stopCtx); err != nil {
		log.Error("dispatcher process: stop", "error", err)
		return 1
	}
	return 0
}

// proc is a dispatcher process started by a test.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	done   chan struct{} // closed once the process exited
	err    error         // cmd.Wait's error, set before done closes
}

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

// spawnDispatcher starts a dispatcher process against the test's server
// and waits until it serves. crash is "" or "point/kind" (crashEnv). The
// process is stopped (or killed) when the test ends.
func (e *env) spawnDispatcher(t *testing.T, crash string, ackWait time.Duration, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		roleEnv+"="+roleDispatcher, urlEnv+"="+e.f.URL(), prefixEnv+"="+e.names.Prefix(),
		crashEnv+"="+crash, ackWaitEnv+"="+ackWait.String())
	cmd.Env = append(cmd.Env, env...)
	p := &proc{cmd: cmd, lines: make(chan string, 16), stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("dispatcher process %d did not stop on request; killed", cmd.Process.Pid)
		}
		if t.Failed() {
			t.Logf("dispatcher process %d stderr (tail):\n%s", cmd.Process.Pid, tail(p.stderr.String(), 100))
		}
	})
	if line := p.next(t, 60*time.Second); line != "ready" {
		t.Fatalf("dispatcher process said %q before ready", line)
	}
	return p
}

// next returns the process's next output line.
func (p *proc) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.done
			t.Fatalf("dispatcher process exited (%v); stderr:\n%s", p.err, tail(p.stderr.String(), 50))
		}
		return line
	case <-time.After(timeout):
		t.Fatalf("no line from the dispatcher process within %s; stderr:\n%s", timeout, tail(p.stderr.String(), 50))
	}
	return ""
}

// kill SIGKILLs the process and waits for it to die.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitKilled(t)
}

// waitKilled waits until the process died of SIGKILL.
func (p *proc) waitKilled(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the dispatcher process did not die")
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("dispatcher process ended with %v, want killed by SIGKILL; stderr:\n%s", p.err, tail(p.stderr.String(), 50))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
