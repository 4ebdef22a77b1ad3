package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// Registry is where replay reads workflow definitions; *registry.Registry
// is the production one.
type Registry interface {
	registry.Reader
	// List returns every deployed workflow with its revisions; replay
	// uses it to find which revision was the latest when a start that
	// names none was applied.
	List(ctx context.Context) ([]registry.Workflow, error)
}

// RunStore is the run bucket as replay reads and restores it;
// *kvstore.RunStore is the production one.
type RunStore interface {
	Get(ctx context.Context, runID string, opts ...kvstore.ReadOption) ([]byte, uint64, error)
	Create(ctx context.Context, runID string, data []byte) (uint64, error)
	Update(ctx context.Context, runID string, data []byte, rev uint64) (uint64, error)
}

// Source is what a replay reads.
type Source struct {
	JS       jetstream.JetStream
	Names    subjects.Names
	Registry Registry
	// Runs is the run bucket. Rebuild reads the saved record from it for
	// the order the dispatchers applied inputs in; Check and Restore need
	// it. Without it Rebuild follows stream order.
	Runs RunStore
	// Settings are the dispatchers' settings that shape a record. Its
	// Names is replaced by Source.Names; nil Tokens loads the
	// deployment's secret from the workflow bucket, as dispatchers do.
	// Default: the dispatchers' defaults.
	Settings step.Settings
	// RunOptions are the reducer options of deployments that carry no
	// policy (a deployment's own policy is read with it), as the
	// dispatchers were given them. Default: none.
	RunOptions run.Options
	// Archived, when set, is the run as the archive keeps it (retention
	// removed it): its history and record stand for the input stream's
	// and the run bucket's.
	Archived *wire.Archived
}

// Order sources, in Info.Order.
const (
	// OrderRecord: inputs were taken in the order the saved record lists.
	OrderRecord = "record"
	// OrderStream: there was no usable record; inputs were taken in
	// stream order, as one dispatcher applies them.
	OrderStream = "stream"
)

// Info says what a rebuild read and did.
type Info struct {
	RunID string
	// Messages is how many messages the history holds; First and Last
	// are the stream sequences of the first and the last.
	Messages    int
	First, Last uint64
	// Applied counts inputs the reducer took; Rejected those it refused
	// (they leave the state as it was).
	Applied, Rejected int
	// Skipped are the messages that changed nothing else: malformed or
	// failing ones the dispatchers terminate, duplicates, and inputs the
	// dispatchers never applied. In replay order.
	Skipped []Skipped
	// Order is OrderRecord or OrderStream.
	Order string
	// Notes are assumptions the rebuild had to make, one sentence each.
	Notes []string
	// Record is what the dispatchers would have saved after these inputs.
	Record *runrecord.Record
}

// Skipped is a history message that did not reach the reducer.
type Skipped struct {
	Seq  uint64
	Kind string
	Why  string
}

// saved is the run's stored record, as far as it could be read.
type saved struct {
	found bool
	data  []byte
	rev   uint64
	rec   *runrecord.Record // nil if it does not decode
	state *run.State
	err   error // why rec or state is nil
}

func loadSaved(ctx context.Context, src Source, runID string) (saved, error) {
	if src.Archived != nil {
		sv := saved{found: true, data: src.Archived.Record}
		if sv.rec, sv.err = runrecord.Decode(sv.data); sv.err == nil {
			if sv.state, sv.err = step.DecodeState(sv.rec); sv.err != nil {
				sv.rec = nil
			}
		}
		return sv, nil
	}
	if src.Runs == nil {
		return saved{}, nil
	}
	data, rev, err := src.Runs.Get(ctx, runID)
	if errors.Is(err, kvstore.ErrRunNotFound) {
		return saved{}, nil
	}
	if err != nil {
		return saved{}, fmt.Errorf("replay: read the record of run %s: %w", runID, err)
	}
	sv := saved{found: true, data: data, rev: rev}
	if sv.rec, sv.err = runrecord.Decode(data); sv.err == nil {
		if sv.state, sv.err = step.DecodeState(sv.rec); sv.err != nil {
			sv.rec = nil
		}
	}
	return sv, nil
}

// Rebuild replays the run's history and returns the state it leads to.
// With src.Runs set it follows the order the saved record lists, so that
// the state equals the saved one whatever order competing dispatchers
// applied inputs in; without a record it takes stream order. A history
// that lost messages the state depends on gives a *TrimmedError.
func Rebuild(ctx context.Context, src Source, runID string) (*run.State, Info, error) {
	if err := checkSource(src, runID); err != nil {
		return nil, Info{}, err
	}
	sv, err := loadSaved(ctx, src, runID)
	if err != nil {
		return nil, Info{}, err
	}
	r, info, err := rebuild(ctx, src, runID, sv)
	return r.State, info, err
}

func checkSource(src Source, runID string) error {
	switch {
	case src.JS == nil:
		return errors.New("replay: Source.JS is nil")
	case src.Names == (subjects.Names{}):
		return errors.New("replay: Source.Names is unset (use subjects.New)")
	case src.Registry == nil:
		return errors.New("replay: Source.Registry is nil (pass the workflow registry)")
	}
	if err := subjects.CheckRunID(runID); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

func rebuild(ctx context.Context, src Source, runID string, sv saved) (step.Run, Info, error) {
	w, err := replayHistory(ctx, src, runID, sv)
	return w.run, w.info, err
}

// replayedHistory is one replay of a run's history.
type replayedHistory struct {
	// msgs is the history in stream order.
	msgs []Message
	// run is the run after the history; info what the replay did.
	run  step.Run
	info Info
	// judge holds the verdict on each message; it covers every message
	// of msgs once the replay got through them all.
	judge *Judge
}

// replayHistory replays the run's history and judges each message. Its
// errors are Rebuild's; msgs is set whenever the history was read, and
// the judge has judged every message also when the run never started
// (ErrNotStarted).
func replayHistory(ctx context.Context, src Source, runID string, sv saved) (replayedHistory, error) {
	var msgs []Message
	var err error
	if src.Archived != nil {
		msgs = archivedHistory(src.Archived)
	} else {
		msgs, err = ReadHistory(ctx, src.JS, src.Names, runID)
	}
	if err != nil {
		return replayedHistory{}, err
	}
	w := replayedHistory{msgs: msgs, info: Info{RunID: runID, Messages: len(msgs), Order: OrderStream}}
	if len(msgs) > 0 {
		w.info.First, w.info.Last = msgs[0].Seq, msgs[len(msgs)-1].Seq
	}
	cfg := src.Settings
	cfg.Names = src.Names
	cfg = cfg.WithDefaults()
	w.judge = NewJudge(cfg)
	if err := checkTrimmed(ctx, src, runID, msgs, sv); err != nil {
		if errors.Is(err, ErrNotStarted) && !errors.Is(err, ErrHistoryTrimmed) {
			// No start and no record: every input is malformed or waits
			// for a run that never comes, whatever the order.
			for _, m := range msgs {
				w.judge.unstarted(m)
			}
		}
		return w, err
	}
	if cfg.Tokens == nil {
		// Results were screened with the deployment's secret; so are they here.
		if cfg.Tokens, err = token.Load(ctx, src.JS, src.Names); err != nil {
			return w, fmt.Errorf("replay: %w", err)
		}
	}
	rp, err := NewStepper(src.Registry, cfg, src.RunOptions)
	if err != nil {
		return w, fmt.Errorf("replay: %w", err)
	}
	var p plan
	if sv.rec != nil && len(sv.rec.Order) > 0 {
		w.info.Order = OrderRecord
		p = planByRecord(msgs, sv.rec.Order, sv.rec.Applied, refusedSeqs(sv.rec))
	} else {
		if sv.found {
			w.info.Notes = append(w.info.Notes, fmt.Sprintf("the saved record is unusable (%v): inputs taken in stream order", sv.err))
		}
		p = planByStream(src.Names, msgs)
	}
	pin, note, err := startRevision(ctx, src, p.order, sv)
	if err != nil {
		return w, err
	}
	if note != "" {
		w.info.Notes = append(w.info.Notes, note)
	}

	var cur step.Run
	var startOutcome string
	for _, m := range p.order {
		next, outcome, why, err := rp.Step(ctx, cur, m, pin)
		if err != nil {
			return w, fmt.Errorf("replay: run %s: %w", runID, err)
		}
		w.judge.Step(m, outcome, why, next)
		kind := kindOf(src.Names, m.Subject)
		switch outcome {
		case step.Applied:
			w.info.Applied++
		case step.Rejected:
			w.info.Rejected++
		case step.NoRun:
			why = reasonNoRun
		case step.Duplicate:
			why = "already applied"
		}
		if outcome != step.Applied && outcome != step.Rejected {
			w.info.Skipped = append(w.info.Skipped, Skipped{Seq: m.Seq, Kind: kind, Why: string(outcome) + ": " + why})
		}
		if cur.Record == nil && outcome != step.Applied && kind == subjects.KindStart && startOutcome == "" {
			startOutcome = fmt.Sprintf("its start (seq %d) was %s: %s", m.Seq, outcome, why)
		}
		cur = next
	}
	for _, m := range p.unapplied {
		w.info.Skipped = append(w.info.Skipped, Skipped{Seq: m.Seq, Kind: kindOf(src.Names, m.Subject), Why: p.why[m.Seq]})
		w.judge.Skip(m, p.why[m.Seq])
	}
	w.run = cur
	if cur.Record == nil {
		return w, fmt.Errorf("replay: run %s: %w: %s", runID, ErrNotStarted, startOutcome)
	}
	w.info.Record = cur.Record
	return w, nil
}

func kindOf(names subjects.Names, subject string) string {
	if _, kind, _, err := names.ParseInput(subject); err == nil {
		return kind
	}
	return "?"
}

// archivedHistory is an archived run's history as messages.
func archivedHistory(ar *wire.Archived) []Message {
	msgs := make([]Message, 0, len(ar.History))
	for _, m := range ar.History {
		msgs = append(msgs, Message{Seq: m.Seq, Time: m.Time, Subject: m.Subject, Header: m.Header, Data: m.Data})
	}
	return msgs
}
