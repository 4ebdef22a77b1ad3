package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
)

// Registry is where replay reads workflow definitions; *kvstore.Registry
// is the production one.
type Registry interface {
	dispatcher.Registry
	// List returns every deployed workflow with its revisions; replay
	// uses it to find which revision was the latest when a start that
	// names none was applied.
	List(ctx context.Context) ([]kvstore.Workflow, error)
}

// Source is what a replay reads.
type Source struct {
	JS       jetstream.JetStream
	Names    subjects.Names
	Registry Registry
	// Runs is the run bucket. Rebuild reads the saved record from it for
	// the order the dispatchers applied inputs in; Check and Restore need
	// it. Without it Rebuild follows stream order.
	Runs dispatcher.RunStore
	// Dispatcher holds the dispatchers' settings that shape a record:
	// Tokens, RunOptions (task retry policies of deployments that carry
	// none: a deployment's own policy is read with it), AppliedHistory,
	// RejectedHistory, MaxInputBytes and UnknownRunWait. Its Names is
	// replaced by Source.Names; nil Tokens loads the deployment's secret
	// from the workflow bucket, as dispatchers do. Default: the
	// dispatcher's defaults.
	Dispatcher dispatcher.Config
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
	Record *dispatcher.Record
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
	rec   *dispatcher.Record // nil if it does not decode
	state *run.State
	err   error // why rec or state is nil
}

func loadSaved(ctx context.Context, src Source, runID string) (saved, error) {
	if src.Runs == nil {
		return saved{}, nil
	}
	data, rev, err := src.Runs.Get(ctx, runID)
	if errors.Is(err, dispatcher.ErrRunNotFound) {
		return saved{}, nil
	}
	if err != nil {
		return saved{}, fmt.Errorf("replay: read the record of run %s: %w", runID, err)
	}
	sv := saved{found: true, data: data, rev: rev}
	if sv.rec, sv.err = dispatcher.DecodeRecord(data); sv.err == nil {
		if sv.state, sv.err = sv.rec.RunState(); sv.err != nil {
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

func rebuild(ctx context.Context, src Source, runID string, sv saved) (dispatcher.Replayed, Info, error) {
	var err error
	cfg := src.Dispatcher
	cfg.Names = src.Names
	cfg = cfg.WithDefaults()
	if cfg.Tokens == nil {
		// Results were screened with the deployment's secret; so are they here.
		if cfg.Tokens, err = token.Load(ctx, src.JS, src.Names); err != nil {
			return dispatcher.Replayed{}, Info{}, fmt.Errorf("replay: %w", err)
		}
	}
	rp, err := dispatcher.NewReplayer(src.Registry, cfg)
	if err != nil {
		return dispatcher.Replayed{}, Info{}, fmt.Errorf("replay: %w", err)
	}
	msgs, err := ReadHistory(ctx, src.JS, src.Names, runID)
	if err != nil {
		return dispatcher.Replayed{}, Info{}, err
	}
	info := Info{RunID: runID, Messages: len(msgs), Order: OrderStream}
	if len(msgs) > 0 {
		info.First, info.Last = msgs[0].Seq, msgs[len(msgs)-1].Seq
	}
	if err := checkTrimmed(ctx, src, runID, msgs, sv); err != nil {
		return dispatcher.Replayed{}, info, err
	}
	var p plan
	if sv.rec != nil && len(sv.rec.Order) > 0 {
		info.Order = OrderRecord
		p = planByRecord(msgs, sv.rec.Order, sv.rec.Applied)
	} else {
		if sv.found {
			info.Notes = append(info.Notes, fmt.Sprintf("the saved record is unusable (%v): inputs taken in stream order", sv.err))
		}
		p = planByStream(src.Names, msgs, cfg.UnknownRunWait)
	}
	info.Notes = append(info.Notes, p.notes...)
	pin, note, err := startRevision(ctx, src, p.order, sv)
	if err != nil {
		return dispatcher.Replayed{}, info, err
	}
	if note != "" {
		info.Notes = append(info.Notes, note)
	}

	var cur dispatcher.Replayed
	var startOutcome string
	for _, m := range p.order {
		in := dispatcher.Input{Subject: m.Subject, Header: m.Header, Data: m.Data, Seq: m.Seq, Time: m.Time}
		next, outcome, why, err := rp.Step(ctx, cur, in, pin)
		if err != nil {
			return dispatcher.Replayed{}, info, fmt.Errorf("replay: run %s: %w", runID, err)
		}
		kind := kindOf(src.Names, m.Subject)
		switch outcome {
		case dispatcher.Applied:
			info.Applied++
		case dispatcher.Rejected:
			info.Rejected++
		case dispatcher.NoRun:
			why = "not a start, and the run had no record: dispatchers hand it back until the start is saved"
		case dispatcher.Duplicate:
			why = "already applied"
		}
		if outcome != dispatcher.Applied && outcome != dispatcher.Rejected {
			info.Skipped = append(info.Skipped, Skipped{Seq: m.Seq, Kind: kind, Why: string(outcome) + ": " + why})
		}
		if cur.Record == nil && outcome != dispatcher.Applied && kind == subjects.KindStart && startOutcome == "" {
			startOutcome = fmt.Sprintf("its start (seq %d) was %s: %s", m.Seq, outcome, why)
		}
		cur = next
	}
	for _, m := range p.unapplied {
		info.Skipped = append(info.Skipped, Skipped{Seq: m.Seq, Kind: kindOf(src.Names, m.Subject), Why: p.why[m.Seq]})
	}
	if cur.Record == nil {
		return cur, info, fmt.Errorf("replay: run %s: %w: %s", runID, ErrNotStarted, startOutcome)
	}
	info.Record = cur.Record
	return cur, info, nil
}

func kindOf(names subjects.Names, subject string) string {
	if _, kind, _, err := names.ParseInput(subject); err == nil {
		return kind
	}
	return "?"
}
