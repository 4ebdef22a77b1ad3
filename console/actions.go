package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
)

var timeNow = time.Now

// commands are the jetflow command lines equivalent to the page's
// actions, shell-quoted; the page completes the event line with the type
// and payload typed in.
type commands struct {
	// Flags are the connection flags every command needs.
	Flags  string `json:"flags"`
	Status string `json:"status"`
	Event  string `json:"event"`
	Cancel string `json:"cancel"`
	// The operator's (docs/OPERATIONS.md); the page adds the reason.
	Pause     string `json:"pause"`
	Resume    string `json:"resume"`
	Terminate string `json:"terminate"`
	Redrive   string `json:"redrive"`
}

// connFlags are the connection flags every command needs.
func (c *Console) connFlags() string {
	var flags []string
	if c.cfg.NATSURL != "" {
		flags = append(flags, "--nats", shellQuote(c.cfg.NATSURL))
	}
	if p := c.cfg.Prefix; p != "" && p != subjects.DefaultPrefix {
		flags = append(flags, "--prefix", shellQuote(p))
	}
	return strings.Join(flags, " ")
}

func (c *Console) commandsFor(id string, awaiting []awaitView) commands {
	f := c.connFlags()
	line := func(args ...string) string { return strings.TrimSpace("jetflow " + strings.Join(args, " ") + " " + f) }
	event := "TYPE"
	if len(awaiting) > 0 {
		event = shellQuote(awaiting[0].Event)
	}
	return commands{
		Flags:  f,
		Status: line("status", shellQuote(id)),
		Event:  line("event", shellQuote(id), event, "--payload", "'null'"),
		Cancel: line("cancel", shellQuote(id)),
		Pause:  line("pause", shellQuote(id)), Resume: line("resume", shellQuote(id)),
		Terminate: line("terminate", shellQuote(id), "--reason", "REASON"),
		Redrive:   line("redrive", shellQuote(id)),
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxActionBody bounds an action's request body (an event payload).
const maxActionBody = 1 << 20

// actionHeader must accompany every action: a cross-site form cannot set
// it, and a cross-origin script cannot send it without a preflight the
// console never grants.
const actionHeader = "X-Jetflow-Console"

// checkAction refuses actions when they are off or the request may come
// from another site, and decodes the JSON body into v.
func (c *Console) checkAction(w http.ResponseWriter, r *http.Request, v any) bool {
	if !c.cfg.Actions {
		writeError(w, http.StatusForbidden, "the console is read-only: start it with --console-actions (JETFLOW_CONSOLE_ACTIONS=true) to act on runs")
		return false
	}
	if r.Header.Get(actionHeader) == "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeError(w, http.StatusForbidden, "an action needs Content-Type application/json and the "+actionHeader+" header")
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			writeError(w, http.StatusForbidden, fmt.Sprintf("an action from origin %q is refused (the console is at %s)", o, r.Host))
			return false
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxActionBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes", maxActionBody))
			return false
		}
		writeError(w, http.StatusBadRequest, "the request body is not the expected JSON object: "+err.Error())
		return false
	}
	return true
}

// eventRequest is the body of an event action.
type eventRequest struct {
	Type string `json:"type"`
	// Payload is any JSON; absent sends null, as `jetflow event` does.
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (c *Console) apiSendEvent(w http.ResponseWriter, r *http.Request) {
	var req eventRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	if err := subjects.CheckEventType(req.Type); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	l, ok := c.liveRun(w, r)
	if !ok {
		return
	}
	payload := json.RawMessage("null")
	if len(bytes.TrimSpace(req.Payload)) > 0 {
		payload = req.Payload
	}
	if err := c.cfg.Client.SendEvent(r.Context(), l.sum.ID, req.Type, payload); err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	c.log.Info("console: event sent", slog.String("run_id", l.sum.ID), slog.String("event", req.Type), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}

// cancelRequest is the body of a cancel action.
type cancelRequest struct {
	Reason string `json:"reason"`
}

func (c *Console) apiCancel(w http.ResponseWriter, r *http.Request) {
	var req cancelRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	l, ok := c.liveRun(w, r)
	if !ok {
		return
	}
	if err := c.cfg.Client.Cancel(r.Context(), l.sum.ID, req.Reason); err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	c.log.Info("console: cancel sent", slog.String("run_id", l.sum.ID), slog.String("reason", req.Reason), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}

// liveRun loads the run of the request and refuses a settled one.
func (c *Console) liveRun(w http.ResponseWriter, r *http.Request) (*loaded, bool) {
	l, err := c.load(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return nil, false
	}
	if run.Status(l.st.Status).Terminal() {
		writeError(w, http.StatusConflict, fmt.Sprintf("run %s is %s: it takes no more events or cancels", l.sum.ID, l.st.Status))
		return nil, false
	}
	return l, true
}
