package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one OS process of the deployment (a NATS node, a dispatcher or a
// worker) that the harness starts, SIGKILLs and starts again. Every
// incarnation appends its standard error and output to the same log file.
type proc struct {
	kind, name string
	// argv[0] is the program; env is added to the harness's environment.
	argv, env []string
	// isReady reports whether a line of standard output says the
	// process serves.
	isReady func(line string) bool
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed once the current incarnation exited
	ready   chan struct{} // closed once it said it serves
	started int           // incarnations so far
	// claimed: the harness is taking the process down and up again; no
	// other fault may pick it meanwhile.
	claimed bool
	// asked is set while the harness kills or stops the incarnation;
	// crashes lists the exits nobody asked for, once ready.
	asked   bool
	crashes []string
}

// Process kinds, as the report names them.
const (
	kindNATS       = "nats"
	kindDispatcher = "dispatcher"
	kindWorker     = "worker"
)

// errExited says the process ended before it said it was ready.
var errExited = errors.New("exited before it was ready")

// start starts a new incarnation and waits until it is ready, within
// timeout. On failure the incarnation is gone (killed if need be).
func (p *proc) start(timeout time.Duration) error {
	p.mu.Lock()
	if p.cmd != nil && !closed(p.done) {
		p.mu.Unlock()
		return fmt.Errorf("%s is already running", p.name)
	}
	cmd, done, ready, err := p.launch()
	p.mu.Unlock()
	if err != nil {
		return err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-done:
		return fmt.Errorf("%s %w (%v); see %s", p.name, errExited, cmd.ProcessState, p.logPath)
	case <-timer.C:
		_ = p.kill()
		return fmt.Errorf("%s not ready within %s; see %s", p.name, timeout, p.logPath)
	}
}

// launch starts a new incarnation; p.mu is held.
func (p *proc) launch() (cmd *exec.Cmd, done, ready chan struct{}, err error) {
	logf, err := os.OpenFile(p.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, nil, err
	}
	p.started++
	fmt.Fprintf(logf, "=== %s: incarnation %d at %s\n", p.name, p.started, time.Now().Format(time.RFC3339Nano))
	cmd = exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stderr = logf
	// A harness that dies must not leave its deployment running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = logf.Close() // the error above is the one to report
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close() // the error above is the one to report
		return nil, nil, nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	done, ready = make(chan struct{}), make(chan struct{})
	p.asked = false
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			fmt.Fprintf(logf, "stdout: %s\n", sc.Text())
			if !signalled && p.isReady(sc.Text()) {
				signalled = true
				close(ready)
			}
		}
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== %s: incarnation exited: %v\n", p.name, err)
		if cerr := logf.Close(); cerr != nil {
			fmt.Fprintf(os.Stderr, "chaos: close the log of %s: %v\n", p.name, cerr)
		}
		p.mu.Lock()
		if signalled && !p.asked {
			p.crashes = append(p.crashes, fmt.Sprintf("%s exited on its own at %s: %v (see %s)",
				p.name, time.Now().Format(time.StampMilli), err, p.logPath))
		}
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done, p.ready = cmd, done, ready
	return cmd, done, ready, nil
}

// running reports whether the current incarnation is alive.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// claim reserves a serving process for a fault; release gives it back
// once it serves again.
func (p *proc) claim() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claimed || p.cmd == nil || closed(p.done) || !closed(p.ready) {
		return false
	}
	p.claimed = true
	return true
}

func (p *proc) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claimed = false
}

// kill SIGKILLs the current incarnation and waits for it to be gone.
func (p *proc) kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.asked = true
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return fmt.Errorf("%s is not running", p.name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not die within 30s of SIGKILL", p.name)
	}
}

// stop asks the current incarnation to drain (SIGTERM) and kills it if it
// has not exited within timeout. It reports whether it exited on its own
// with status 0.
func (p *proc) stop(timeout time.Duration) (graceful bool) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.asked = true
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return true
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return cmd.ProcessState.Success()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// unasked returns the exits nobody asked for.
func (p *proc) unasked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.crashes...)
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
