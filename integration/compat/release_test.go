package compat

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// previousRelease is the commit of the release this build upgrades: the
// rolling upgrade test runs its dispatchers beside this build's. Move it
// to the new release's commit when one is made (and add that release's
// fixture set to testdata/).
const previousRelease = "6707540cab91f2fcf71d64cf18707826f6b73484"

// buildRelease builds ./cmd/jetflow of a commit of this repository into
// a temporary directory and returns the binary's path. The commit's tree
// is read with git archive, so the working tree, its index and git's
// worktree list are left alone. A commit missing from the clone fails the
// test, naming the fix.
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	// A cold build of the whole module beside other test packages on two
	// cores has taken over five minutes; .ci/run warms the cache first.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the rolling upgrade test builds release %s from this repository's git history, but git cannot read a repository here: %v%s",
			commit[:7], err, stderrOf(err))
	}
	repo := strings.TrimSpace(string(out))
	if err := exec.CommandContext(ctx, "git", "-C", repo, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Fatalf("commit %s (release %s, which the rolling upgrade test builds) is not in this clone's history, as in a shallow clone: "+
			"run `git fetch --unshallow` (or `git fetch origin %s`) and test again", commit, commit[:7], commit)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", commit)
	stdout, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		t.Fatal(err)
	}
	extractErr := extract(stdout, src)
	_, _ = io.Copy(io.Discard, stdout)
	if err := archive.Wait(); err != nil || extractErr != nil {
		t.Fatalf("git archive %s: %v %v %s", commit, err, extractErr, stderr.String())
	}
	bin := filepath.Join(dir, "jetflow-"+commit[:7])
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build release %s: %v", commit[:7], err)
	}
	build := exec.CommandContext(ctx, gobin, "build", "-o", bin, "./cmd/jetflow")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ./cmd/jetflow of release %s: %v\n%s", commit[:7], err, out)
	}
	return bin
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// oldDispatcher is a dispatcher process of the previous release.
type oldDispatcher struct {
	name    string
	cmd     *exec.Cmd
	stderr  *logBuffer
	metrics string // the /metrics URL
	done    chan struct{}
	err     error // cmd.Wait's, set before done closes
}

// startOldDispatcher runs `jetflow dispatcher` of the binary bin against
// the deployment and waits until it serves.
func startOldDispatcher(t *testing.T, name, bin, url, prefix string, ackWait time.Duration, provision bool) *oldDispatcher {
	t.Helper()
	args := []string{
		"dispatcher", "--nats", url, "--prefix", prefix, "--http", "127.0.0.1:-1",
		"--ack-wait", ackWait.String(), "--drain-timeout", "15s", "--log-level", "warn",
	}
	if provision {
		args = append(args, "--provision")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv()
	p := &oldDispatcher{name: name, cmd: cmd, stderr: &logBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
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
		if t.Failed() {
			t.Logf("%s (release %s) stderr (tail):\n%s", name, previousRelease[:7], tail(p.stderr.String(), 60))
		}
	})
	timeout := time.After(60 * time.Second)
	for p.metrics == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				<-p.done
				t.Fatalf("%s exited before it served (%v); stderr:\n%s", name, p.err, tail(p.stderr.String(), 40))
			}
			if u, found := strings.CutPrefix(line, "http: "); found {
				p.metrics = strings.TrimSpace(u) + "/metrics"
			}
		case <-timeout:
			t.Fatalf("%s did not serve within a minute; stderr:\n%s", name, tail(p.stderr.String(), 40))
		}
	}
	go func() {
		for range lines {
		}
	}()
	return p
}

// cleanEnv is the test's environment without jetflow's own variables,
// which would configure the old release's command.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JETFLOW_") {
			env = append(env, kv)
		}
	}
	return env
}

// applied is how many inputs the process applied, from its metrics.
func (p *oldDispatcher) applied(t *testing.T) float64 {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(p.metrics)
	if err != nil {
		t.Fatalf("metrics of %s: %v", p.name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "jetflow_dispatcher_messages_total{") || !strings.Contains(line, `outcome="applied"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metrics of %s: %q: %v", p.name, line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("metrics of %s: %v", p.name, err)
	}
	return sum
}

// stop sends sig and waits for the process to end. A SIGTERM must end it
// with status 0 (a graceful drain), a SIGKILL by that signal.
func (p *oldDispatcher) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end within 30s of %s", p.name, sig)
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case sig == syscall.SIGKILL && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL):
		t.Fatalf("%s ended with %v, want killed by SIGKILL", p.name, p.err)
	case sig != syscall.SIGKILL && p.err != nil:
		t.Fatalf("%s ended with %v after %s, want a graceful exit with status 0; stderr:\n%s", p.name, p.err, sig, tail(p.stderr.String(), 40))
	}
}

// runCLI runs a client verb of the binary bin and returns its output.
func runCLI(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jetflow %s (release %s): %v\n%s", strings.Join(args, " "), previousRelease[:7], err, out)
	}
	return string(out)
}
