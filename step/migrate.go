package step

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/wire"
)

// Pins are the members of a run's stored state that name the revision
// it is pinned to, not what it did: sameness (docs/REVISIONS.md) leaves
// them out.
var Pins = []string{"workflow", "revision", "startRevision"}

// Unpinned is a stored run state (run.Encode) without its Pins, and
// with each armed statechart timer's transition named by its key in
// chart (statechart.Chart.TransitionKey) rather than by its index, which
// another revision may number otherwise: the part of a run that must be
// equal under two revisions for one to stand for the other. Its members
// are in sorted order and its numbers as stored. A nil chart leaves
// indices as they are (for a status announcement, which has none).
func Unpinned(state []byte, chart *statechart.Chart) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(state))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode run state: %w", err)
	}
	for _, k := range Pins {
		delete(m, k)
	}
	if ctl, ok := m["control"].(map[string]any); ok && chart != nil {
		timers, _ := ctl["timers"].([]any)
		for _, t := range timers {
			tm, ok := t.(map[string]any)
			if !ok {
				continue
			}
			if n, ok := tm["transition"].(json.Number); ok {
				if i, err := n.Int64(); err == nil {
					tm["transition"] = chart.TransitionKey(int(i))
				}
			}
		}
	}
	return json.Marshal(m)
}

// Proof is the fingerprint of a run's state that a migration carries:
// the hex SHA-256 of its unpinned form. A run whose state has another
// fingerprint is not the run the migration's check judged.
func Proof(st *run.State, chart *statechart.Chart) (string, error) {
	data, err := run.Encode(st)
	if err != nil {
		return "", fmt.Errorf("encode run state: %w", err)
	}
	u, err := Unpinned(data, chart)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(u)
	return hex.EncodeToString(sum[:]), nil
}

func (in *Input) parseMigrate(data []byte) error {
	var body wire.Migrate
	if err := strictJSON(data, &body); err != nil {
		return malformed("migrate body: %v", err)
	}
	for _, r := range []string{body.From, body.To} {
		if r == "" || len(r) > 256 || strings.ContainsAny(r, "\x00\r\n") {
			return malformed("migrate body: from %q and to %q must both be revision names", body.From, body.To)
		}
	}
	in.migrate = &body
	in.msg.Reason, in.msg.Operator = body.Reason, body.Operator
	return nil
}

// ChartOf is a definition's compiled statechart, nil when it has none.
func ChartOf(def *Definition) *statechart.Chart {
	if def == nil {
		return nil
	}
	if e, ok := def.Program.(Engine); ok && e.Workflow != nil {
		return e.Workflow.Chart
	}
	return nil
}

// Migration is the migration an input carries, nil for any other input.
func (in *Input) Migration() *wire.Migrate { return in.migrate }

// migrate moves cur onto the revision the migration names, as it
// stands: the state is the run's own apart from its pins, so nothing is
// published and nothing the run waits for changes. It refuses a run the
// check did not judge the same (Divergence), a run that is not on the
// revision the check replayed (From), a settled run, and a run whose
// state changed since the check (Proof).
func migrate(s Settings, cur Run, in *Input, seq uint64, now float64, defs Definitions) (Result, error) {
	st, m := cur.State, in.migrate
	if st.Control.Time > now {
		now = st.Control.Time
	}
	no := func(format string, args ...any) (Result, error) {
		return refuse(s, cur, in, seq, now, fmt.Errorf("%w: migration to revision %s refused: %s", run.ErrRejected, m.To, fmt.Sprintf(format, args...))), nil
	}
	switch {
	case m.Divergence != "":
		return no("%s", m.Divergence)
	case st.Revision == m.To:
		return no("the run is on revision %s already", m.To)
	case st.Revision != m.From:
		return no("the run is on revision %s, not on revision %s its history was checked against: check it again", st.Revision, m.From)
	case st.Status.Terminal():
		return no("the run is %s: only a run that has not ended moves", st.Status)
	}
	own, err := defs.Definition(st.Workflow, st.Revision)
	if err != nil {
		return Result{Run: cur}, err
	}
	def, err := defs.Definition(st.Workflow, m.To)
	if err != nil {
		return Result{Run: cur}, err
	}
	from, to := ChartOf(own), ChartOf(def)
	if from == nil || to == nil {
		return no("revision %s or %s has no statechart to move the run between", st.Revision, m.To)
	}
	proof, err := Proof(st, from)
	if err != nil {
		return Result{Run: cur, Outcome: Failed, Reason: fmt.Errorf("%w: %w", ErrPermanent, err)}, nil
	}
	if proof != m.Proof {
		return no("the run took inputs since its history was checked (state %.12s, checked %.12s): check it again", proof, m.Proof)
	}
	next := *st
	next.Ignored = nil
	// Armed timers name their transition by index: the index the same
	// transition has under the other revision.
	next.Control.Timers = slices.Clone(st.Control.Timers)
	for i, t := range next.Control.Timers {
		key := from.TransitionKey(t.Transition)
		j := to.TransitionByKey(key)
		if j < 0 {
			return no("revision %s has no transition %s, which a timer the run armed fires", m.To, key)
		}
		next.Control.Timers[i].Transition = j
	}
	if next.StartRevision == "" {
		next.StartRevision = st.Revision
	}
	next.Revision = def.Revision
	res := commit(s, def, in, seq, now, cur, &next, nil)
	if rec := res.Run.Record; res.Outcome == Applied && rec.Status != nil {
		// Readers of the record see the revision it is pinned to now;
		// nothing is announced, as nothing else changed.
		ws := *rec.Status
		ws.Revision = def.Revision
		rec.SetStatus(&ws)
	}
	return res, nil
}
