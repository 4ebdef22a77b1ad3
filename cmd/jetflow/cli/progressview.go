package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/wire"
)

// view prints a run's progress (client.Tracker): plain lines for logs and pipes, or, on a
// terminal, coloured lines under a status line that keeps time.
type view struct {
	w   io.Writer
	tty bool
	// prefix starts every plain line (the demo's run ids).
	prefix string

	mu      sync.Mutex
	base    float64 // logical time of the first step, Unix ms
	wall    time.Time
	state   string
	waiting bool
	running map[string]bool
	failed  *client.FailedTask // the last attempt that failed for good, which names the run's error
	live    bool               // the status line is on screen
	stop    chan struct{}
	done    sync.WaitGroup
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newView returns a view on w; on a terminal its status line ticks until
// close.
func newView(w io.Writer) *view {
	v := &view{w: w, tty: isTerminal(w), wall: time.Now(), running: map[string]bool{}}
	if v.tty {
		v.stop = make(chan struct{})
		v.done.Add(1)
		go v.tick()
	}
	return v
}

func (v *view) tick() {
	defer v.done.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.mu.Lock()
			if v.live {
				v.drawLive()
			}
			v.mu.Unlock()
		}
	}
}

// close stops the status line and clears it.
func (v *view) close() {
	if !v.tty {
		return
	}
	close(v.stop)
	v.done.Wait()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearLive()
}

// show prints steps.
func (v *view) show(steps []client.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range steps {
		if v.base == 0 {
			v.base = s.At
		}
		switch s.Kind {
		case client.ProgressState:
			v.state, v.waiting = s.State, false
		case client.ProgressWaiting, client.ProgressPaused:
			v.waiting = true
		case client.ProgressInvoke:
			v.running[s.Node] = true
		case client.ProgressSettle:
			delete(v.running, s.Node)
			if !s.OK && !s.Retry {
				v.failed = &client.FailedTask{State: s.State, Node: s.Node, Task: s.Task, Code: s.Code, Message: s.Detail}
			}
		}
		v.clearLive()
		if v.tty {
			fmt.Fprintln(v.w, v.pretty(s))
		} else {
			fmt.Fprintln(v.w, v.prefix+strings.ReplaceAll(v.plain(s), "\n", "\n"+v.prefix))
		}
		if s.Kind == client.ProgressEnd {
			v.live = false
		} else if v.tty {
			v.drawLive()
		}
	}
}

func (v *view) elapsed(at float64) string {
	return fmt.Sprintf("%.3fs", max(0, at-v.base)/1000)
}

// plain is a step as one line for logs: "+0.012s state check".
func (v *view) plain(s client.Progress) string {
	t := "+" + v.elapsed(s.At) + " "
	switch s.Kind {
	case client.ProgressState:
		return t + "state " + stateName(s.State)
	case client.ProgressInvoke:
		return fmt.Sprintf("%stask %s %s invoked, attempt %d", t, s.Name, s.Task, s.Attempt)
	case client.ProgressSettle:
		switch {
		case s.OK:
			return strings.TrimSpace(fmt.Sprintf("%stask %s %s ok %s", t, s.Name, s.Task, s.Detail))
		case s.Retry:
			return fmt.Sprintf("%stask %s %s attempt %d failed%s; will retry", t, s.Name, s.Task, s.Attempt, failure(s))
		}
		return fmt.Sprintf("%stask %s %s attempt %d failed%s", t, s.Name, s.Task, s.Attempt, failure(s))
	case client.ProgressWaiting:
		return strings.TrimSpace(t + "waiting for " + orNone(s.Detail))
	case client.ProgressPaused:
		return t + "paused by an operator" + reasonSuffix(s.Detail) + " (jetflow resume)"
	case client.ProgressRefused:
		return fmt.Sprintf("%s%s seq %d %s", t, s.Name, s.Seq, refusalText(s.Detail))
	case client.ProgressEnd:
		return s.Status.Status + " in " + v.elapsed(s.At) + v.outcome(s.Status)
	}
	return t + string(s.Kind)
}

// ANSI styles of the terminal view.
const (
	ansiReset  = "\033[0m"
	ansiDim    = "\033[2m"
	ansiBold   = "\033[1m"
	ansiRed    = "\033[31m"
	ansiGreen  = "\033[32m"
	ansiYellow = "\033[33m"
	ansiCyan   = "\033[36m"
	clearLine  = "\r\033[K"
)

func paint(style, s string) string { return style + s + ansiReset }

// pretty is a step for a terminal.
func (v *view) pretty(s client.Progress) string {
	t := paint(ansiDim, fmt.Sprintf("%8s", v.elapsed(s.At)))
	switch s.Kind {
	case client.ProgressState:
		return t + "  " + paint(ansiCyan, "→ "+stateName(s.State))
	case client.ProgressInvoke:
		return t + "    " + paint(ansiDim, fmt.Sprintf("▸ %s  %s  attempt %d", s.Name, s.Task, s.Attempt))
	case client.ProgressSettle:
		switch {
		case s.OK:
			return t + "    " + paint(ansiGreen, "✓ "+s.Name) + "  " + paint(ansiDim, s.Detail)
		case s.Retry:
			return t + "    " + paint(ansiYellow, fmt.Sprintf("↻ %s  attempt %d failed%s; will retry", s.Name, s.Attempt, failure(s)))
		}
		return t + "    " + paint(ansiRed, fmt.Sprintf("✗ %s  attempt %d failed", s.Name, s.Attempt)) + failure(s)
	case client.ProgressWaiting:
		return t + "    " + paint(ansiYellow, "… waiting for "+orNone(s.Detail))
	case client.ProgressPaused:
		return t + "    " + paint(ansiYellow, "‖ paused by an operator"+reasonSuffix(s.Detail))
	case client.ProgressRefused:
		return t + "    " + paint(ansiYellow, fmt.Sprintf("⊘ %s seq %d %s", s.Name, s.Seq, refusalText(s.Detail)))
	case client.ProgressEnd:
		style := ansiGreen
		if s.Status.Status != wire.StatusDone {
			style = ansiRed
		}
		return paint(ansiBold+style, s.Status.Status) + " in " + v.elapsed(s.At) + v.outcome(s.Status)
	}
	return t + "  " + string(s.Kind)
}

func (v *view) drawLive() {
	spin := `⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏`
	frames := []rune(spin)
	secs := time.Since(v.wall).Seconds()
	line := fmt.Sprintf("%c %s", frames[int(secs*10)%len(frames)], stateName(v.state))
	if v.waiting {
		line += " · waiting"
	}
	if n := len(v.running); n > 0 {
		line += fmt.Sprintf(" · %d task%s running", n, plural(n))
	}
	line += fmt.Sprintf(" · %.1fs", secs)
	fmt.Fprint(v.w, clearLine+paint(ansiDim, line))
	v.live = true
}

func (v *view) clearLive() {
	if v.live {
		fmt.Fprint(v.w, clearLine)
		v.live = false
	}
}

// outcome is outcomeLine naming the task that failed the run, as the
// view saw it fail.
func (v *view) outcome(st *wire.Status) string {
	if st.Error != nil && v.failed != nil && st.Error.Path == "/nodes/"+v.failed.Node {
		return "\nerror " + failureText(st.Error, v.failed)
	}
	return outcomeLine(st)
}

// failure is a failed attempt's code and message for its line:
// " (EXIT_64): bad input", or nothing when neither is known.
func failure(s client.Progress) string {
	d := s.Detail
	if s.Retry && d == "failed, will retry" {
		d = "" // the Tracker's own words: no result was read
	}
	out := ""
	if s.Code != "" {
		out = " (" + s.Code + ")"
	}
	if d != "" {
		out += ": " + strings.TrimPrefix(d, client.NodeFailed(s.Node))
	}
	return out
}

// refusalText is "ignored: reason" with the reason as status shows it.
func refusalText(detail string) string {
	verdict, reason, _ := strings.Cut(detail, ": ")
	return verdict + ": " + replay.ReasonText(reason)
}

// outcomeLine is a finished run's result or error on a line of its own,
// or nothing (a cancelled run).
func outcomeLine(st *wire.Status) string {
	switch {
	case st.Error != nil:
		return "\nerror " + errorText(st.Error)
	case st.Status == wire.StatusDone:
		return "\nresult " + orNull(st.Result)
	case st.Status == wire.StatusTerminated && st.Reason != "":
		return "\nreason " + st.Reason
	}
	return ""
}

func orNull(raw []byte) string {
	if len(raw) == 0 {
		return "null"
	}
	return string(raw)
}

// errorText is a run error as CODE PATH message.
func errorText(e *wire.RunError) string {
	return errorHead(e) + client.BareMessage(e.Code, e.Path, e.Message)
}

func errorHead(e *wire.RunError) string {
	path := e.Path
	if path == "" {
		path = "-"
	}
	return e.Code + " " + path + " "
}

// failureText is a task's failure of the run in the author's terms: CODE
// PATH, then the task and state instead of the DAG's node, and the
// worker's code and message when known: "JF2006 /nodes/task task boom@1
// in state go failed (EXIT_64): bad input". The code and path stay the
// engine's (status --json and the conformance corpus have them as is).
func failureText(e *wire.RunError, ft *client.FailedTask) string {
	what := "node " + ft.Node
	if ft.Task != "" {
		what = "task " + ft.Task
		if !strings.HasPrefix(ft.Task, ft.Node+"@") && ft.Node != "task" {
			what += " (node " + ft.Node + ")"
		}
	}
	msg := ft.Message
	if msg == "" {
		msg = client.BareMessage(e.Code, e.Path, e.Message)
	}
	msg = strings.TrimPrefix(msg, client.NodeFailed(ft.Node))
	code := ""
	if ft.Code != "" {
		code = " (" + ft.Code + ")"
	}
	return errorHead(e) + what + " in state " + stateName(ft.State) + " failed" + code + ": " + msg
}

// stateName shortens a state id for people: /states/fulfil/flow/states/ship
// is fulfil/ship.
func stateName(id string) string {
	return strings.ReplaceAll(strings.TrimPrefix(id, "/states/"), "/flow/states/", "/")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// reasonSuffix is ": reason", or nothing without one.
func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
