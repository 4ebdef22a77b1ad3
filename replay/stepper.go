package replay

import (
	"context"
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/step"
)

// Stepper applies a run's recorded inputs one by one exactly as a
// dispatcher applies them: step.Parse and step.Step, with definitions
// from the registry, but without NATS.
type Stepper struct {
	settings step.Settings
	load     func(ctx context.Context, name, revision string) (*step.Definition, error)
}

// NewStepper returns a stepper loading definitions from reg. s must match
// the dispatchers' settings that shape records (Tokens is the
// deployment's secret: results are checked against it); opts are the
// reducer options of deployments without a policy of their own.
func NewStepper(reg registry.Reader, s step.Settings, opts run.Options) (*Stepper, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	l, err := registry.NewLoader(reg, opts, 0)
	if err != nil {
		return nil, err
	}
	return &Stepper{settings: s, load: l.Load}, nil
}

// Step applies m to cur as a dispatcher would and returns the run after
// it, the outcome, and for Malformed, Rejected and Failed the reason.
// startRevision is the revision a start naming none gets (the latest when
// the dispatcher applied it); empty means the latest now. Errors are
// those no dispatcher would have got past either: a workflow that is not
// deployed (registry.ErrUnknownWorkflow), a registry that cannot be read,
// a record that does not decode.
//
// The run it returns carries the run's line of inputs (step.Line) from
// the start on, so that a reset among the inputs goes back to the state
// the line holds for it, as the dispatcher that applied it rebuilt it
// (Rewind): step from the start with the run each step returns.
func (r *Stepper) Step(ctx context.Context, cur step.Run, m Message, startRevision string) (step.Run, step.Outcome, string, error) {
	var in *step.Input
	var err error
	if m.PayloadErr != nil {
		in, err = step.Refuse(r.settings, m.Subject, m.PayloadErr)
	} else {
		in, err = step.Parse(r.settings, m.Subject, m.Header, m.Data)
	}
	if err != nil && (in == nil || cur.Record == nil) {
		return cur, step.Malformed, err.Error(), nil
	}
	defs := step.DefinitionsFunc(func(name, revision string) (*step.Definition, error) {
		if revision == "" {
			revision = startRevision
		}
		def, err := r.load(ctx, name, revision)
		if err != nil {
			return nil, fmt.Errorf("input %d of run %s: %w", m.Seq, in.RunID, err)
		}
		return def, nil
	})
	now := float64(m.Time.UnixMilli())
	res, err := step.Step(r.settings, cur, in, m.Seq, now, defs)
	if err == nil && res.Outcome == step.Rewind {
		at, why := cur.Line.Point(in.RunID, in.ResetTo(), m.Seq)
		res, err = step.Reset(r.settings, res.Run, in, m.Seq, now, defs, at, why)
	}
	if err != nil {
		return res.Run, "", "", err
	}
	res.Run.Line = cur.Line.Took(in, m.Seq, res)
	why := ""
	if res.Reason != nil {
		why = res.Reason.Error()
	}
	return res.Run, res.Outcome, why, nil
}
