package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// The audit log (docs/CONSOLE.md#audit): every action asked of the
// console, accepted or refused, is appended to the audit stream with who
// asked, its target, its result, the peer and the equivalent command. The
// action is answered once its entry is written; when the write fails the
// answer says so (an "audit" member and the X-Jetflow-Audit header)
// rather than dropping the entry silently.

// auditHeader is set on an action's answer whose entry was not written.
const auditHeader = "X-Jetflow-Audit"

// auditBody is what an entry takes from any action's body.
type auditBody struct {
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	Reason    string          `json:"reason"`
	Revision  string          `json:"revision"`
	To        uint64          `json:"to"`
	Operation string          `json:"operation"`
	Filter    *wire.RunFilter `json:"filter"`
}

// answerRecorder holds an action's answer until its entry is written.
type answerRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *answerRecorder) Header() http.Header { return r.header }
func (r *answerRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *answerRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// audited wraps an action's handler: it answers as h does, after writing
// the action's audit entry.
func (c *Console) audited(action string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, maxActionBody+1))
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var body auditBody
		_ = json.Unmarshal(raw, &body) // what the handler refuses, it says why
		rec := &answerRecorder{header: http.Header{}}
		h(rec, r)
		var answer map[string]json.RawMessage
		_ = json.Unmarshal(rec.body.Bytes(), &answer)
		e := c.auditEntry(r, action, body, rec.status, answer)
		if err := c.writeAudit(r.Context(), e); err != nil {
			c.log.Error("console: audit entry not written", slog.String("action", action), slog.String("run_id", e.Run), slog.String("who", e.Who), slog.Any("error", err))
			rec.header.Set(auditHeader, "not written")
			if answer != nil {
				msg, _ := json.Marshal("the audit entry was not written: " + err.Error())
				answer["audit"] = msg
				rec.body.Reset()
				_ = json.NewEncoder(&rec.body).Encode(answer)
			}
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	}
}

func (c *Console) writeAudit(ctx context.Context, e wire.AuditEntry) error {
	if c.cfg.Client == nil {
		return fmt.Errorf("the console has no client to write with")
	}
	// The entry is written even when the browser has gone.
	return c.cfg.Client.WriteAudit(context.WithoutCancel(ctx), e)
}

// auditEntry describes one answered action.
func (c *Console) auditEntry(r *http.Request, action string, b auditBody, status int, answer map[string]json.RawMessage) wire.AuditEntry {
	e := wire.AuditEntry{
		Time: timeNow().UTC().Format(time.RFC3339Nano), Who: Identity(r.Context()), Source: subjects.AuditConsole,
		Action: action, Reason: b.Reason, Remote: r.RemoteAddr, Result: wire.AuditAccepted,
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(answer[k], &s)
		return s
	}
	if status >= 400 {
		e.Result, e.Detail = wire.AuditRefused, fmt.Sprintf("%d %s", status, str("error"))
	} else if seq := string(answer["seq"]); seq != "" {
		e.Detail = "seq " + seq
	}
	id := r.PathValue("id")
	switch action {
	case "jobs-create":
		e.Job, e.Filter = str("id"), b.Filter
		if cmd := str("command"); cmd != "" {
			e.Command = cmd
		} else if b.Filter != nil {
			e.Command = c.bulkCommand(b.Operation, b.Revision, b.Reason, *b.Filter)
		}
		if b.Operation != "" {
			e.Detail = strings.TrimSpace(b.Operation + " " + e.Detail)
		}
		if b.Operation == client.OpMigrate && b.Revision != "" {
			e.Detail += " to revision " + b.Revision
		}
	case "jobs-cancel":
		e.Job, e.Command = id, c.cmdLine("jobs", "cancel", id)
	case "event":
		e.Run, e.Command = id, c.cmdLine("event", id, orPlaceholder(b.Type, "TYPE"), "--payload", "PAYLOAD")
		if len(b.Payload) > 0 {
			// Payloads are data, not the operator's words: not kept.
			e.Detail = strings.TrimSpace(e.Detail + fmt.Sprintf(" (payload of %d bytes not recorded)", len(b.Payload)))
		}
	case "reset":
		e.Run, e.Command = id, c.cmdLine("reset", id, "--to", strconv.FormatUint(b.To, 10), withReason(b.Reason))
	case "redrive":
		args := []string{"redrive", id, withReason(b.Reason)}
		if b.Revision != "" {
			args = append(args, "--revision", b.Revision)
		}
		e.Run, e.Command = id, c.cmdLine(args...)
	default: // cancel, pause, resume, terminate
		e.Run, e.Command = id, c.cmdLine(action, id, withReason(b.Reason))
	}
	return e
}

// withReason is the --reason flag of a command line, "" when empty.
func withReason(reason string) string {
	if reason == "" {
		return ""
	}
	return "--reason " + shellQuote(reason)
}

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// cmdLine is a jetflow command with the connection flags; arguments are
// quoted, except pre-quoted flags such as withReason's.
func (c *Console) cmdLine(args ...string) string {
	out := []string{"jetflow"}
	for _, a := range args {
		switch {
		case a == "":
		case strings.HasPrefix(a, "--"):
			out = append(out, a)
		default:
			out = append(out, shellQuote(a))
		}
	}
	if f := c.connFlags(); f != "" {
		out = append(out, f)
	}
	return strings.Join(out, " ")
}

// operatorOf is what an action names as its operator on the run's record
// and a job's "by": the identity, marked as the console's.
func operatorOf(r *http.Request) string {
	who := Identity(r.Context())
	if who == Anonymous {
		return "console"
	}
	return who + " (console)"
}

// maxAuditPage caps a page of audit entries.
const maxAuditPage = 500

// apiAudit answers a page of the audit log, newest first:
// ?before=SEQ&limit=N&run=RUN&who=NAME.
func (c *Console) apiAudit(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Client == nil {
		writeError(w, http.StatusServiceUnavailable, "the console has no client to read the audit log with")
		return
	}
	q := r.URL.Query()
	limit, before := 50, uint64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q is not a positive number", v))
			return
		}
		limit = min(n, maxAuditPage)
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("before %q is not a stream sequence", v))
			return
		}
		before = n
	}
	page, err := c.cfg.Client.AuditPage(r.Context(), before, limit, client.AuditFilter{Run: q.Get("run"), Who: q.Get("who")})
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, page)
}
