package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
)

// Replayer applies a run's recorded inputs one by one exactly as a
// dispatcher applies them (the same parse, time clamping, reducer,
// rendering and record bookkeeping) but without NATS. Package replay
// reads the history, chooses the order and compares the result.
type Replayer struct {
	cfg    Config
	loader loader
}

// NewReplayer returns a replayer loading definitions from reg. cfg must
// match the dispatchers' settings that shape records: Names, Tokens (the
// deployment's secret: results are checked against it), RunOptions (for
// deployments without a policy of their own), AppliedHistory,
// RejectedHistory and MaxInputBytes.
func NewReplayer(reg Registry, cfg Config) (*Replayer, error) {
	if reg == nil {
		return nil, errors.New("dispatcher: nil Registry (pass the workflow registry the runs' definitions are deployed to)")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l, err := newEngineLoader(cfg, reg)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	return &Replayer{cfg: cfg, loader: l}, nil
}

// Input is one message of a run's history as the input stream holds it.
type Input struct {
	Subject string
	Header  nats.Header
	Data    []byte
	// Seq is the stream sequence; Time the stream timestamp.
	Seq  uint64
	Time time.Time
}

// Outcome says what replaying one input did.
type Outcome string

// Outcomes of Replayer.Step.
const (
	// Applied: the reducer took the input; the record changed.
	Applied Outcome = "applied"
	// Rejected: the reducer refused it; the record only notes it.
	Rejected Outcome = "rejected"
	// Duplicate: the record already reflects this sequence.
	Duplicate Outcome = "duplicate"
	// Malformed: no dispatcher can parse it; they terminate it.
	Malformed Outcome = "malformed"
	// Failed: it fails permanently (a reducer panic, an effect no message
	// can carry); dispatchers terminate it and the record stays.
	Failed Outcome = "failed"
	// NoRun: it is not a start and the run has no record yet; dispatchers
	// hand it back until the start is saved.
	NoRun Outcome = "no-run"
)

// Replayed is a run as far as a replay has rebuilt it. The zero value is
// a run before its start.
type Replayed struct {
	// Record is what the dispatchers would have saved; nil before a start.
	Record *Record
	// State is Record.State decoded.
	State *run.State
}

// Step applies m to cur as a dispatcher would and returns the run after
// it, the outcome, and for Malformed, Rejected and Failed the reason.
// startRevision is the revision a start naming none gets (the latest when
// the dispatcher applied it); empty means the latest now. Errors are
// those no dispatcher would have got past either: a workflow that is not
// deployed (ErrUnknownWorkflow), a registry that cannot be read, a
// record that does not decode.
func (r *Replayer) Step(ctx context.Context, cur Replayed, m Input, startRevision string) (Replayed, Outcome, string, error) {
	// As Dispatcher.handle: the size limit first, then the parse; a
	// malformed input addressed to an existing run is refused on it.
	var in *input
	var err error
	if len(m.Data) > r.cfg.MaxInputBytes {
		err = malformed("input of %d bytes is larger than the dispatcher's limit of %d bytes (Config.MaxInputBytes)", len(m.Data), r.cfg.MaxInputBytes)
	} else {
		in, err = parseInput(r.cfg.Names, m.Subject, m.Header, m.Data)
	}
	if err != nil {
		if in = addressed(r.cfg.Names, m.Subject, err); in == nil || cur.Record == nil {
			return cur, Malformed, err.Error(), nil
		}
	}
	if cur.Record != nil && cur.Record.hasApplied(m.Seq) {
		return cur, Duplicate, "", nil
	}
	if cur.Record == nil && in.kind != subjects.KindStart {
		return cur, NoRun, "", nil
	}
	if cur.Record != nil && cur.State == nil {
		if cur.State, err = cur.Record.RunState(); err != nil {
			return cur, "", "", fmt.Errorf("run %s: %w", in.runID, err)
		}
	}
	var name, revision string
	if cur.State != nil {
		name, revision = cur.State.Workflow, cur.State.Revision
	} else {
		name, revision = in.start.Workflow, in.start.Revision
		if revision == "" {
			revision = startRevision
		}
	}
	def, err := r.loader.load(ctx, name, revision)
	if err != nil {
		return cur, "", "", fmt.Errorf("input %d of run %s: %w", m.Seq, in.runID, err)
	}
	t, err := transit(r.cfg, def, in, m.Seq, float64(m.Time.UnixMilli()), cur.Record, cur.State)
	if err != nil {
		return cur, Failed, err.Error(), nil
	}
	if t.rejected != nil {
		if t.rec != nil {
			cur.Record = t.rec
		}
		return cur, Rejected, t.rejected.Error(), nil
	}
	return Replayed{Record: t.rec, State: t.state}, Applied, "", nil
}

// CheckInput returns why a dispatcher would terminate m as malformed, or
// nil if it parses.
func CheckInput(names subjects.Names, m Input) error {
	_, err := parseInput(names, m.Subject, m.Header, m.Data)
	return err
}
