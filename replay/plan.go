package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// plan is the order a replay applies a history in.
type plan struct {
	order []Message
	// unapplied are messages no dispatcher applied, in stream order, and
	// why (by sequence).
	unapplied []Message
	why       map[uint64]string
}

// planByRecord follows the saved record: its Applied list is the exact
// order of the last inputs applied, and its Order spans give the order
// of every input applied or refused before and among them. refused are
// the sequences the record lists as rejected: the record keeps them out
// of Applied, and they take their place by the spans. Messages none of these name were never applied: terminated,
// dropped, or still in flight when the record was read; those that came
// before the run's start were terminated.
func planByRecord(msgs []Message, order runrecord.Order, applied, refused []uint64) plan {
	p := plan{why: map[uint64]string{}}
	bySeq := make(map[uint64]Message, len(msgs))
	for _, m := range msgs {
		bySeq[m.Seq] = m
	}
	// The spans expanded: every input in stream order within each span.
	var spans []Message
	rank := make(map[uint64]int, len(msgs))
	for _, s := range order {
		i := sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq >= s.From })
		for ; i < len(msgs) && msgs[i].Seq <= s.To; i++ {
			if _, dup := rank[msgs[i].Seq]; !dup {
				rank[msgs[i].Seq] = len(spans)
				spans = append(spans, msgs[i])
			}
		}
	}
	// The inputs before the window of Applied are those the spans put
	// before its first; a span also covers inputs never applied, which
	// Applied (and the refusals) tell apart wherever it reaches.
	inWindow := make(map[uint64]bool, len(applied))
	for _, seq := range applied {
		inWindow[seq] = true
	}
	start := len(spans)
	for i, m := range spans {
		if len(applied) > 0 && m.Seq == applied[0] {
			start = i
			break
		}
		if !inWindow[m.Seq] {
			p.order = append(p.order, m)
		}
	}
	// Refusals the window holds but Applied does not list go where the
	// spans put them among the applied inputs.
	var extra []Message
	for _, seq := range refused {
		if r, ok := rank[seq]; ok && r >= start && !inWindow[seq] {
			extra = append(extra, spans[r])
			inWindow[seq] = true
		}
	}
	sort.Slice(extra, func(i, j int) bool { return rank[extra[i].Seq] < rank[extra[j].Seq] })
	for _, seq := range applied {
		m, ok := bySeq[seq]
		if !ok {
			continue
		}
		if r, ranked := rank[seq]; ranked {
			for len(extra) > 0 && rank[extra[0].Seq] < r {
				p.order, extra = append(p.order, extra[0]), extra[1:]
			}
		}
		p.order = append(p.order, m)
	}
	p.order = append(p.order, extra...)
	used := make(map[uint64]bool, len(p.order))
	for _, m := range p.order {
		used[m.Seq] = true
	}
	var first *Message
	if len(order) > 0 {
		if m, ok := bySeq[order[0].From]; ok {
			first = &m
		}
	}
	for _, m := range msgs {
		if used[m.Seq] {
			continue
		}
		p.unapplied = append(p.unapplied, m)
		if first != nil && m.Seq < first.Seq {
			p.why[m.Seq] = beforeStart(first.Seq)
			continue
		}
		p.why[m.Seq] = "never applied by the dispatchers by the time the record was saved (terminated, dropped, or still in flight)"
	}
	return p
}

// refusedSeqs are the sequences rec lists as rejected.
func refusedSeqs(rec *runrecord.Record) []uint64 {
	out := make([]uint64, len(rec.Rejected))
	for i, r := range rec.Rejected {
		out[i] = r.Seq
	}
	return out
}

// beforeStart says why an input that came before its run's start at
// seq was never applied.
func beforeStart(seq uint64) string {
	return fmt.Sprintf("terminated by the dispatchers: it came before the run's start (seq %d), and an input for a run without a record waits only for a start the stream holds before it", seq)
}

// planByStream takes stream order, as one dispatcher applies a run's
// inputs. Inputs that precede the run's first start are terminated by
// the dispatchers (no start came before them), so they are not applied.
func planByStream(names subjects.Names, msgs []Message) plan {
	p := plan{why: map[uint64]string{}}
	first := -1
	for i, m := range msgs {
		if kindOf(names, m.Subject) == subjects.KindStart {
			first = i
			break
		}
	}
	if first <= 0 {
		p.order = msgs
		return p
	}
	for _, m := range msgs[:first] {
		p.unapplied = append(p.unapplied, m)
		p.why[m.Seq] = beforeStart(msgs[first].Seq)
	}
	p.order = msgs[first:]
	return p
}

// startRevision is the revision a start naming none ran: the saved
// state's, or else the latest deployed by the start's time.
func startRevision(ctx context.Context, src Source, order []Message, sv saved) (string, string, error) {
	var start *Message
	for i := range order {
		if kindOf(src.Names, order[i].Subject) == subjects.KindStart {
			start = &order[i]
			break
		}
	}
	if start == nil {
		return "", "", nil
	}
	var body wire.Start
	if json.Unmarshal(start.Data, &body) != nil || body.Revision != "" || body.Workflow == "" {
		return "", "", nil
	}
	if sv.state != nil && sv.state.StartRevision != "" {
		return sv.state.StartRevision, "", nil // a redrive moved the run since
	}
	if sv.state != nil {
		return sv.state.Revision, "", nil
	}
	wfs, err := src.Registry.List(ctx)
	if err != nil {
		return "", "", fmt.Errorf("replay: list deployed workflows: %w", err)
	}
	for _, wf := range wfs {
		if wf.Name != body.Workflow || len(wf.Revisions) == 0 {
			continue
		}
		pick := ""
		for _, r := range wf.Revisions {
			if !r.Deployed.After(start.Time) {
				pick = r.Revision
			}
		}
		if pick == "" {
			latest := wf.Latest().Revision
			return latest, fmt.Sprintf("the start names no revision of %q and none was deployed before it (%s): took the latest, %q", body.Workflow, start.Time.UTC().Format(time.RFC3339Nano), latest), nil
		}
		return pick, fmt.Sprintf("the start names no revision of %q: took %q, the latest deployed at its time", body.Workflow, pick), nil
	}
	return "", "", nil
}

// checkTrimmed refuses a history that lost what the state depends on:
// the run's start, or any input the saved record says was applied.
func checkTrimmed(ctx context.Context, src Source, runID string, msgs []Message, sv saved) error {
	trimmed := func(missing string) *TrimmedError {
		e := &TrimmedError{RunID: runID, Missing: missing}
		if s, err := kvstore.BindLeader(ctx, src.JS, src.Names.InputStream()); err == nil {
			si := s.CachedInfo()
			e.StreamFirst, e.StreamFirstTime, e.MaxAge = si.State.FirstSeq, si.State.FirstTime, si.Config.MaxAge
		}
		return e
	}
	if len(msgs) == 0 {
		if sv.found {
			return trimmed("the input stream holds no message of the run, yet its record exists")
		}
		return fmt.Errorf("replay: run %s: %w: the input stream holds no message on %s and the run has no record", runID, ErrNoHistory, src.Names.RunInputs(runID))
	}
	if sv.rec != nil {
		have := make(map[uint64]bool, len(msgs))
		for _, m := range msgs {
			have[m.Seq] = true
		}
		// The first span begins with the start; the others' ends may be
		// other runs' sequences (a late input cuts the span around it),
		// so only Applied names more inputs of this run for certain.
		if o := sv.rec.Order; len(o) > 0 && !have[o[0].From] {
			return trimmed(fmt.Sprintf("its start (seq %d) is gone: the oldest message kept for the run is seq %d (%s)", o[0].From, msgs[0].Seq, kindOf(src.Names, msgs[0].Subject)))
		}
		need := slices.Sorted(slices.Values(sv.rec.Applied))
		for _, seq := range need {
			if !have[seq] {
				return trimmed(fmt.Sprintf("input seq %d, which the saved record says was applied, is no longer in the stream (the oldest message kept for the run is seq %d)", seq, msgs[0].Seq))
			}
		}
	}
	for _, m := range msgs {
		switch kindOf(src.Names, m.Subject) {
		case subjects.KindStart:
			return nil
		case subjects.KindResult, subjects.KindTimer:
			// Only a started run produces these: its start came first.
			return trimmed(fmt.Sprintf("its start is gone: the oldest message kept for the run is seq %d, a %s, which only follows a start", msgs[0].Seq, kindOf(src.Names, msgs[0].Subject)))
		}
	}
	if sv.found {
		return trimmed(fmt.Sprintf("its start is gone: the oldest message kept for the run is seq %d (%s), yet its record exists", msgs[0].Seq, kindOf(src.Names, msgs[0].Subject)))
	}
	if e := trimmed(""); e.StreamFirst > 1 && msgs[0].Seq >= e.StreamFirst {
		e.Missing = fmt.Sprintf("no start is kept: the oldest message kept for the run is seq %d (%s), and the stream has dropped older messages", msgs[0].Seq, kindOf(src.Names, msgs[0].Subject))
		return e
	}
	return fmt.Errorf("replay: run %s: %w: the input stream holds %d inputs for it and no start", runID, ErrNotStarted, len(msgs))
}
