package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// A run's history is its input messages, read from the input stream and
// stepped through the dispatcher's own transition code (a
// dispatcher.Replayer) in the order the record says they were applied,
// so that each entry also shows what it did: the states left and
// entered, the tasks invoked, the timers armed, the status announced.
// The replay check is package replay's, the one `jetflow replay` runs.

// historyView is the timeline and the replay check.
type historyView struct {
	Entries []entry `json:"entries"`
	// Truncated: the history is longer than MaxHistory; only its start
	// is shown and it is not replayed.
	Truncated bool        `json:"truncated,omitempty"`
	Replay    replayCheck `json:"replay"`
}

// entry is one input message and what applying it did.
type entry struct {
	Seq     uint64 `json:"seq"`
	Time    int64  `json:"time"`
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	// Body is the message body as JSON (a string when it is not JSON).
	Body    any      `json:"body,omitempty"`
	Outcome string   `json:"outcome,omitempty"`
	Why     string   `json:"why,omitempty"`
	From    []string `json:"from,omitempty"`
	To      []string `json:"to,omitempty"`
	Status  string   `json:"status,omitempty"`
	Effects []effect `json:"effects,omitempty"`
}

// effect is a message a step sent: a task invocation, a timer, a status.
type effect struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	Data    any    `json:"data,omitempty"`
}

// replayCheck is the verdict of rebuilding the run from its history.
type replayCheck struct {
	// Verdict is "equal", "differs", "trimmed" or "error".
	Verdict    string   `json:"verdict"`
	Detail     string   `json:"detail,omitempty"`
	Divergence string   `json:"divergence,omitempty"`
	Saved      string   `json:"saved,omitempty"`
	Rebuilt    string   `json:"rebuilt,omitempty"`
	Applied    int      `json:"applied"`
	Rejected   int      `json:"rejected"`
	Order      string   `json:"order,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

func (c *Console) apiHistory(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	l, err := c.load(ctx, r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	msgs, err := replay.ReadHistory(ctx, c.cfg.JS, c.cfg.Names, l.sum.ID)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	v := historyView{Entries: []entry{}}
	if len(msgs) > c.cfg.MaxHistory {
		msgs, v.Truncated = msgs[:c.cfg.MaxHistory], true
		v.Replay = replayCheck{Verdict: "error", Detail: fmt.Sprintf("the history holds more than %d messages: not replayed here (run `jetflow replay`)", c.cfg.MaxHistory)}
	}
	v.Entries = c.timeline(ctx, msgs, l)
	if !v.Truncated {
		v.Replay = c.check(ctx, l.sum.ID)
	}
	writeJSON(w, http.StatusOK, v)
}

// timeline steps through msgs in the record's order; messages the
// record never applied follow, marked so. Each entry's outcome and why
// are package replay's verdict on it, the one `jetflow history` prints.
func (c *Console) timeline(ctx context.Context, msgs []replay.Message, l *loaded) []entry {
	order, rest := applyOrder(msgs, l.rec.Order)
	out := make([]entry, 0, len(msgs))
	rp, err := c.stepper(ctx)
	judge := replay.NewJudge(c.cfg.Settings.WithDefaults())
	var cur step.Run
	for _, m := range order {
		e := c.entryOf(m)
		if err != nil {
			e.Outcome, e.Why = "error", err.Error()
			out = append(out, e)
			continue
		}
		next, outcome, why, serr := rp.Step(ctx, cur, m, l.st.Revision)
		if serr != nil {
			e.Outcome, e.Why = "error", serr.Error()
			out = append(out, e)
			continue
		}
		judge.Step(m, outcome, why, next)
		if outcome == step.Applied {
			if cur.State != nil {
				e.From = cur.State.Control.Active
			}
			e.To, e.Status = next.State.Control.Active, string(next.State.Status)
			if slices.Equal(e.From, e.To) {
				e.From, e.To = nil, nil
			}
			e.Effects = effectsOf(next.Record.Outbox)
		}
		cur = next
		out = append(out, e)
	}
	for _, m := range rest {
		judge.Skip(m, "not applied when the record was saved (in flight, or dropped by the dispatchers)")
		out = append(out, c.entryOf(m))
	}
	// A later step can settle an earlier event's verdict (one buffered
	// while the run was busy), so the verdicts are read at the end.
	for i := range out {
		if v, why, ok := judge.Verdict(out[i].Seq); ok && out[i].Outcome != "error" {
			out[i].Outcome, out[i].Why = string(v), why
		}
	}
	return out
}

// stepper returns the replayer the timeline steps with, made at first
// use: it needs the deployment's token secret, read from NATS.
func (c *Console) stepper(ctx context.Context) (*replay.Stepper, error) {
	c.replayMu.Lock()
	defer c.replayMu.Unlock()
	if c.replayer != nil {
		return c.replayer, nil
	}
	cfg := c.cfg.Settings
	if cfg.Tokens == nil {
		signer, err := token.Load(ctx, c.cfg.JS, c.cfg.Names)
		if err != nil {
			return nil, fmt.Errorf("the deployment's token secret: %w", err)
		}
		cfg.Tokens = signer
	}
	rp, err := replay.NewStepper(c.cfg.Registry, cfg, c.cfg.RunOptions)
	if err != nil {
		return nil, err
	}
	c.replayer = rp
	return rp, nil
}

// applyOrder takes msgs span by span of the record's order (stream order
// without one); the messages no span covers are returned apart.
func applyOrder(msgs []replay.Message, order runrecord.Order) (applied, rest []replay.Message) {
	if len(order) == 0 {
		return msgs, nil
	}
	used := make([]bool, len(msgs))
	for _, s := range order {
		i := sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq >= s.From })
		for ; i < len(msgs) && msgs[i].Seq <= s.To; i++ {
			if !used[i] {
				used[i] = true
				applied = append(applied, msgs[i])
			}
		}
	}
	for i, m := range msgs {
		if !used[i] {
			rest = append(rest, m)
		}
	}
	return applied, rest
}

// maxBody bounds the body an entry carries; the page shows a longer one
// cut, saying so.
const maxBody = 64 << 10

func (c *Console) entryOf(m replay.Message) entry {
	kind, summary := replay.Summarize(c.cfg.Names, m)
	e := entry{Seq: m.Seq, Time: m.Time.UnixMilli(), Kind: kind, Summary: summary}
	e.Body = bodyOf(m.Data)
	if b, ok := e.Body.(map[string]any); ok && kind == subjects.KindResult && b["token"] != nil {
		// The token authorizes a result; the page has no use for it.
		b["token"] = "(hidden)"
	}
	return e
}

// bodyOf decodes a message body for display: JSON as a value, other
// bytes as text, anything over maxBody as its first bytes.
func bodyOf(data []byte) any {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if len(data) > maxBody {
		return fmt.Sprintf("%s… (%d bytes in all)", bytes.ToValidUTF8(data[:maxBody], nil), len(data))
	}
	var v any
	if json.Unmarshal(data, &v) == nil {
		return v
	}
	return string(bytes.ToValidUTF8(data, []byte("\uFFFD")))
}

func effectsOf(out []runrecord.Outgoing) []effect {
	var effs []effect
	for _, o := range out {
		e := effect{Kind: o.Kind, Data: bodyOf(o.Data)}
		switch o.Kind {
		case runrecord.OutInvoke:
			var inv wire.Invocation
			_ = json.Unmarshal(o.Data, &inv)
			inv.Token = "" // a secret between the dispatcher and the worker
			e.Data = inv
			e.Summary = fmt.Sprintf("invoke %s@%s for node %s, attempt %d", inv.Task, inv.Version, inv.Node, inv.Attempt)
		case runrecord.OutTimer:
			var t wire.Timer
			_ = json.Unmarshal(o.Data, &t)
			if t.Timer == "" {
				t.Timer = o.Header[wire.HeaderTimer]
			}
			e.Summary = "timer " + t.Timer
			if t.Deadline > 0 {
				e.Summary += " due " + time.UnixMilli(int64(t.Deadline)).UTC().Format("15:04:05.000")
			}
		case runrecord.OutStatus:
			var s wire.Status
			_ = json.Unmarshal(o.Data, &s)
			e.Summary = "status " + s.Status
		default:
			e.Summary = o.Kind + " " + o.Subject
		}
		effs = append(effs, e)
	}
	return effs
}

// check runs package replay's check of the run.
func (c *Console) check(ctx context.Context, id string) replayCheck {
	src := replay.Source{JS: c.cfg.JS, Names: c.cfg.Names, Registry: c.cfg.Registry, Runs: c.cfg.Runs, Settings: c.cfg.Settings, RunOptions: c.cfg.RunOptions}
	rep, err := replay.Check(ctx, src, id)
	rc := replayCheck{Applied: rep.Info.Applied, Rejected: rep.Info.Rejected, Order: rep.Info.Order, Notes: rep.Info.Notes}
	switch {
	case errors.Is(err, replay.ErrHistoryTrimmed):
		rc.Verdict, rc.Detail = "trimmed", err.Error()
	case err != nil:
		rc.Verdict, rc.Detail = "error", err.Error()
	case rep.Equal:
		rc.Verdict = "equal"
	default:
		rc.Verdict, rc.Divergence, rc.Saved, rc.Rebuilt = "differs", rep.Divergence, rep.SavedValue, rep.RebuiltValue
		if rc.Divergence == "" {
			rc.Detail = "the states are equal as values but not byte for byte"
		}
	}
	return rc
}
