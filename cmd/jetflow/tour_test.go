package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tourLine is one command line of the README's tour, as written.
type tourLine struct {
	text    string // the line, comment included, as a shell reads it
	command string // the line without its comment
	daemon  bool   // its comment says "keeps running"
	exit    int    // the exit status its comment names ("(exit 1)"), else 0
}

var exitComment = regexp.MustCompile(`\(exit (\d+)\)`)

// parseTour parses the fenced sh blocks of README's "A five-minute tour"
// section into its command lines, in order.
func parseTour(readme string) ([]tourLine, error) {
	_, section, ok := strings.Cut(readme, "\n## A five-minute tour\n")
	if !ok {
		return nil, errors.New(`no "## A five-minute tour" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var lines []tourLine
	inBlock := false
	for _, l := range strings.Split(section, "\n") {
		switch {
		case l == "```sh":
			inBlock = true
			continue
		case strings.HasPrefix(l, "```"):
			inBlock = false
			continue
		case !inBlock || strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
			continue
		}
		tl := tourLine{text: l, command: strings.TrimSpace(l)}
		// A comment begins at "  #" (two spaces): the tour quotes no such text.
		if i := strings.Index(l, "  #"); i >= 0 {
			tl.command = strings.TrimSpace(l[:i])
			comment := l[i:]
			tl.daemon = strings.Contains(comment, "keeps running")
			if m := exitComment.FindStringSubmatch(comment); m != nil {
				n, err := strconv.Atoi(m[1])
				if err != nil || n > 255 {
					return nil, fmt.Errorf("line %q names exit status %s", l, m[1])
				}
				tl.exit = n
			}
		}
		lines = append(lines, tl)
	}
	if inBlock {
		return nil, errors.New("an unclosed code block")
	}
	return lines, nil
}

// tourOutputs are what chosen lines of the tour must print (stdout and
// stderr together), by a piece of their command that names the line.
var tourOutputs = map[string][]string{
	"status order-1 --wait":  {"status    done", "state     done", `"tracking":"PW`},
	"--id order-2":           {"order-2", "state rejected", "done in"},
	"replay order-1":         {"order-1"},
	"list --workflow order":  {"order-1", "order-2"},
	"terminate order-5":      {"order-5"},
	"status order-6 --wait":  {"status    failed", "state     fulfil/ship", "has not verified the address of customer zoe"},
	"redrive order-6 --wait": {"run order-6 redriven (input ", "done in done\n"},
	"reset order-6":          {"--to-state fulfil/ship is input", "run order-6 reset to its state after input"},
	"cancel --workflow order --started-after 1h --yes": {"runs match", "done"},
}

// tourEnds are the ends of the runs the tour starts: status and state.
var tourEnds = map[string][2]string{
	"order-1": {"done", "done"},
	"order-2": {"done", "rejected"},
	"order-3": {"cancelled", ""},
	"order-4": {"cancelled", ""},
	"order-5": {"terminated", ""},
	"order-6": {"done", "done"},
}

// TestReadmeTour runs the README's tour as a user pastes it, parsed from
// README.md itself so that the two cannot drift apart: every line of its
// sh blocks in order, in a directory holding the repository's examples,
// with the lines that keep running in the background (the user's other
// terminals). The defaults the README relies on (port 4222, the data
// directory) are moved to free ports and a temporary directory through the
// environment variables every verb reads, not by editing the lines.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := parseTour(string(readme))
	if err != nil {
		t.Fatalf("README.md's tour: %v", err)
	}
	if len(lines) < 20 {
		t.Fatalf("the tour has %d command lines; the parser lost some", len(lines))
	}
	dir := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"JETFLOW_LISTEN=127.0.0.1:-1", "JETFLOW_HTTP=127.0.0.1:-1",
		"JETFLOW_DATA=" + filepath.Join(dir, "data"),
	}
	seen := map[string]bool{}
	var daemons []*tourDaemon
	for i, l := range lines {
		switch {
		case i == 0:
			// TestMain built ./cmd/jetflow once; the line must ask for that.
			if l.command != "go build -o jetflow ./cmd/jetflow" {
				t.Fatalf("the tour begins with %q, want the build of ./cmd/jetflow into ./jetflow", l.command)
			}
			if err := os.Symlink(binary, filepath.Join(dir, "jetflow")); err != nil {
				t.Fatal(err)
			}
			continue
		case !strings.HasPrefix(l.command, "./jetflow "):
			t.Fatalf("tour line %q does not run ./jetflow", l.text)
		case l.daemon:
			d := startTourDaemon(t, dir, env, l)
			daemons = append(daemons, d)
			if d.nats != "" {
				env = append(env, "JETFLOW_NATS_URL="+d.nats)
			}
			continue
		}
		out, exit := runTourLine(t, dir, env, l)
		if exit != l.exit {
			t.Fatalf("tour line %q exited %d, want %d:\n%s", l.text, exit, l.exit, out)
		}
		for key, want := range tourOutputs {
			if !strings.Contains(l.command, key) {
				continue
			}
			seen[key] = true
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("tour line %q printed no %q:\n%s", l.text, w, out)
				}
			}
		}
	}
	for key := range tourOutputs {
		if !seen[key] {
			t.Errorf("no tour line has %q, whose output this test checks: update tourOutputs with the README", key)
		}
	}
	if len(daemons) != 2 {
		t.Errorf("the tour keeps %d processes running, want 2 (serve and the workers)", len(daemons))
	}
	for id, want := range tourEnds {
		out, _ := runTourLine(t, dir, env, tourLine{text: "./jetflow status " + id + " --json"})
		var st struct{ Status, State string }
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status %s --json: %v:\n%s", id, err, out)
		}
		if st.Status != want[0] || (want[1] != "" && st.State != "/states/"+want[1]) {
			t.Errorf("run %s ended %s in %s, want %s in %s", id, st.Status, st.State, want[0], want[1])
		}
	}
	// The other terminals end with Ctrl-C, workers first.
	for i := len(daemons) - 1; i >= 0; i-- {
		if exit := daemons[i].interrupt(t); exit != 0 {
			t.Errorf("%q exited %d after Ctrl-C:\n%s", daemons[i].line, exit, daemons[i].out)
		}
	}
}

// runTourLine runs one line with sh in dir, as a user's shell would.
func runTourLine(t *testing.T, dir string, env []string, l tourLine) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", l.text)
	cmd.Dir, cmd.Env = dir, testEnv(env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tour line %q: %v", l.text, err)
	}
	return out.String(), 0
}

// tourDaemon is a tour line that keeps running.
type tourDaemon struct {
	line string
	cmd  *exec.Cmd
	out  *markBuffer
	nats string // the NATS URL serve printed
	done chan struct{}
	exit int
}

// startTourDaemon starts l and waits until it says it is ready: serve
// prints its HTTP address last, the workers log that they serve.
func startTourDaemon(t *testing.T, dir string, env []string, l tourLine) *tourDaemon {
	t.Helper()
	marker := "serving"
	if strings.HasPrefix(l.command, "./jetflow serve") {
		marker = "\nhttp: "
	}
	d := &tourDaemon{line: l.text, out: newMarkBuffer(marker), done: make(chan struct{})}
	d.cmd = exec.Command("sh", "-c", "exec "+l.text)
	d.cmd.Dir, d.cmd.Env = dir, testEnv(env)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
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
		_ = d.cmd.Process.Kill()
		<-d.done
	})
	select {
	case <-d.out.found:
	case <-d.done:
		t.Fatalf("tour line %q exited %d before it was ready:\n%s", l.text, d.exit, d.out)
	case <-time.After(daemonBound):
		t.Fatalf("tour line %q not ready after %s:\n%s", l.text, daemonBound, d.out)
	}
	for _, line := range strings.Split(d.out.String(), "\n") {
		if url, ok := strings.CutPrefix(line, "nats: "); ok {
			d.nats = url
		}
	}
	return d
}

func (d *tourDaemon) interrupt(t *testing.T) int {
	t.Helper()
	if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		return d.exit
	case <-time.After(daemonBound):
		t.Fatalf("%q did not exit %s after Ctrl-C:\n%s", d.line, daemonBound, d.out)
		return -1
	}
}

// markBuffer collects a process's output and closes found once it holds
// marker.
type markBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	marker string
	found  chan struct{}
}

func newMarkBuffer(marker string) *markBuffer {
	return &markBuffer{marker: marker, found: make(chan struct{})}
}

func (m *markBuffer) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	had := bytes.Contains(m.b.Bytes(), []byte(m.marker))
	n, err := m.b.Write(p)
	if !had && bytes.Contains(m.b.Bytes(), []byte(m.marker)) {
		close(m.found)
	}
	return n, err
}

func (m *markBuffer) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b.String()
}

var tourParseCases = []struct {
	name, readme string
	want         []tourLine
	err          string
}{
	{
		name: "lines, comments, daemons and exit statuses",
		readme: "# x\n\n## A five-minute tour\n\nText.\n\n```sh\n./jetflow serve   # keeps running: a server\n\n# a comment line\n" +
			"./jetflow status r --wait    # failed (exit 1)\n```\n\n```json\n{}\n```\n\n```sh\n./jetflow jobs\n```\n\n## Next\n\n```sh\n./jetflow other\n```\n",
		want: []tourLine{
			{text: "./jetflow serve   # keeps running: a server", command: "./jetflow serve", daemon: true},
			{text: "./jetflow status r --wait    # failed (exit 1)", command: "./jetflow status r --wait", exit: 1},
			{text: "./jetflow jobs", command: "./jetflow jobs"},
		},
	},
	{name: "no section", readme: "## Another tour\n```sh\n./jetflow x\n```\n", err: "no \"## A five-minute tour\" section"},
	{name: "unclosed block", readme: "\n## A five-minute tour\n```sh\n./jetflow x\n", err: "an unclosed code block"},
	{name: "exit status out of range", readme: "\n## A five-minute tour\n```sh\n./jetflow x  # (exit 999)\n```\n", err: "names exit status 999"},
}

func TestParseTour(t *testing.T) {
	t.Parallel()
	for _, c := range tourParseCases {
		got, err := parseTour(c.readme)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && fmt.Sprint(got) != fmt.Sprint(c.want):
			t.Errorf("%s: parsed %+v, want %+v", c.name, got, c.want)
		}
	}
}

// FuzzParseTour: the parser never panics, and each line it returns is a
// nonblank command that begins its text.
func FuzzParseTour(f *testing.F) {
	for _, c := range tourParseCases {
		f.Add(c.readme)
	}
	if readme, err := os.ReadFile("../../README.md"); err == nil {
		f.Add(string(readme))
	}
	f.Fuzz(func(t *testing.T, readme string) {
		lines, err := parseTour(readme)
		if err != nil {
			return
		}
		for _, l := range lines {
			if l.command == "" || !strings.HasPrefix(strings.TrimSpace(l.text), l.command) || l.exit < 0 || l.exit > 255 {
				t.Fatalf("line %+v", l)
			}
		}
	})
}
