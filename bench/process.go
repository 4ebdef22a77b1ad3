package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// agentProc is one helper process and the line protocol to it.
type agentProc struct {
	role, name string
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	replies    *bufio.Scanner
	stderr     *tailBuffer
	mu         sync.Mutex // one command at a time
	url        string
}

// startAgent starts a helper process and waits for its ready line.
func startAgent(ctx context.Context, cfg Config, role, name string, args ...string) (*agentProc, error) {
	argv := append(append([]string(nil), cfg.Agent[1:]...), append([]string{"-role", role}, args...)...)
	cmd := exec.Command(cfg.Agent[0], argv...)
	cmd.Env = append(cmd.Environ(), cfg.AgentEnv...) // what it would inherit, plus AgentEnv
	p := &agentProc{role: role, name: name, cmd: cmd, stderr: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s %s (%s): %w", role, name, cfg.Agent[0], err)
	}
	p.replies = bufio.NewScanner(out)
	p.replies.Buffer(make([]byte, 64<<10), 1<<20)
	ready := make(chan error, 1)
	go func() {
		r, err := p.read()
		switch {
		case err != nil:
		case r.Error != "":
			err = errors.New(r.Error)
		case !r.Ready:
			err = fmt.Errorf("first line is not the ready line")
		}
		p.url = r.URL
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-time.After(time.Minute):
		err = errors.New("not ready after a minute")
	}
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("bench: %s %s did not start: %w%s", role, name, err, p.stderrTail())
	}
	return p, nil
}

func (p *agentProc) read() (agentReply, error) {
	var r agentReply
	if !p.replies.Scan() {
		err := p.replies.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return r, fmt.Errorf("reading from %s %s: %w", p.role, p.name, err)
	}
	if err := json.Unmarshal(p.replies.Bytes(), &r); err != nil {
		return r, fmt.Errorf("%s %s wrote %q: %w", p.role, p.name, p.replies.Text(), err)
	}
	return r, nil
}

// call sends one command and returns its reply.
func (p *agentProc) call(command string) (agentReply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.stdin, command+"\n"); err != nil {
		return agentReply{}, fmt.Errorf("%s %s: %w%s", p.role, p.name, err, p.stderrTail())
	}
	r, err := p.read()
	if err == nil && r.Error != "" {
		err = fmt.Errorf("%s %s: %s: %s", p.role, p.name, command, r.Error)
	}
	return r, err
}

func (p *agentProc) pid() int { return p.cmd.Process.Pid }

// stop closes stdin (the agent stops gracefully), then kills it if it has
// not exited when ctx ends.
func (p *agentProc) stop(ctx context.Context) error {
	_ = p.stdin.Close()
	var err error
	done := make(chan struct{})
	go func() {
		err = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		if err != nil {
			return fmt.Errorf("%s %s: %w%s", p.role, p.name, err, p.stderrTail())
		}
		return nil
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s %s killed: it did not stop in time", p.role, p.name)
	}
}

func (p *agentProc) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func (p *agentProc) stderrTail() string {
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		return "; its stderr ends: " + s
	}
	return ""
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
