package otherlang

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// nodeInstall is what makes the Node worker runnable; CI runs it.
const nodeInstall = "npm ci --prefix examples/workers/node"

// requireNode returns the node executable, skipping the test when Node.js
// or the worker's npm dependencies are missing.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not installed (install Node.js 18.19 or later, then run %q)", nodeInstall)
	}
	// A node_modules installed before the worker took up OpenTelemetry
	// lacks its packages: skip, saying so, rather than fail to start.
	for _, dep := range []string{"@nats-io/jetstream", "@opentelemetry/sdk-trace-base", "@opentelemetry/exporter-trace-otlp-proto"} {
		if _, err := os.Stat(filepath.Join(repoRoot(t), "examples", "workers", "node", "node_modules", filepath.FromSlash(dep))); err != nil {
			t.Skipf("the Node worker's dependencies are not installed: no %s (run %q)", dep, nodeInstall)
		}
	}
	return node
}

// buildJetflow builds the real command into a temporary directory.
func buildJetflow(t *testing.T, ctx context.Context) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jetflow")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/jetflow")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building jetflow: %v\n%s", err, out)
	}
	return bin
}

// runNode runs a Node.js script to completion and returns its stdout.
func runNode(t *testing.T, ctx context.Context, node, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// process is a child process whose output goes to the test log.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	out  *lockedBuffer
}

// start runs argv in dir with extra environment; the process is killed
// when the test ends if it is still running.
func start(t *testing.T, name, dir string, env []string, argv ...string) *process {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("--- output of %s:\n%s", name, p.out.String())
		}
	})
	return p
}

// stop sends SIGTERM and returns the process's exit error (nil for exit
// status 0), failing the test if it does not exit within timeout.
func (p *process) stop(t *testing.T, timeout time.Duration) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("signalling %s: %v", p.name, err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %s of SIGTERM", p.name, timeout)
		return nil
	}
}

// exited reports the exit error if the process has ended.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) contains(s string) bool { return strings.Contains(l.String(), s) }
