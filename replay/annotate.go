package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
)

// Verdict says what the dispatchers did with one message of a run's
// history.
type Verdict string

// Verdicts of Annotate and Judge.
const (
	// VerdictApplied: the reducer took the input.
	VerdictApplied = Verdict(step.Applied)
	// VerdictRejected: the reducer refused it (a forged or stale token,
	// an input the run does not accept now, anything after its end); the
	// record lists it in Rejected.
	VerdictRejected = Verdict(step.Rejected)
	// VerdictIgnored: the run consumed it without effect (an event the
	// waiting state does not wait for, or whose guards all fail); the
	// record lists it in Ignored.
	VerdictIgnored Verdict = "ignored"
	// VerdictDuplicate: a redelivery the record already reflected.
	VerdictDuplicate = Verdict(step.Duplicate)
	// VerdictMalformed: no dispatcher can parse it; they terminate it.
	VerdictMalformed = Verdict(step.Malformed)
	// VerdictFailed: it failed permanently; the dispatchers terminate it.
	VerdictFailed = Verdict(step.Failed)
	// VerdictNoRun: not a start, for a run with no record at that point;
	// the dispatchers terminate it (after waiting for the start, if the
	// stream holds one before it).
	VerdictNoRun = Verdict(step.NoRun)
	// VerdictSuperseded: the run took it, then a later reset took the run
	// back to its state after an earlier input: it no longer counts
	// (docs/OPERATIONS.md#reset).
	VerdictSuperseded Verdict = "superseded"
	// VerdictUnapplied: the order the record lists never applied it: the
	// dispatchers terminated or dropped it, or it was still in flight
	// when the record was read.
	VerdictUnapplied Verdict = "unapplied"
)

// Reasons of VerdictNoRun: for an input stepped before the run had a
// record, and for an input of a run the history holds no start of.
const (
	reasonNoRun   = "the run had no record at that point: the dispatchers terminate such an input, after waiting for the start if the stream holds one before it"
	reasonNoStart = "terminated by the dispatchers: the input stream holds no start of the run"
)

// Annotated is one message of a run's history with the verdict on it.
type Annotated struct {
	Message
	// Verdict is empty when the history could not be replayed.
	Verdict Verdict
	// Reason says why: a refusal's reason as the record keeps it
	// (without the reducer's "message rejected: " prefix), why the
	// dispatchers terminate the message or never applied it. An applied
	// input has none, unless it is an event the run buffered while busy:
	// then it says which later step took it.
	Reason string
}

// Annotate replays the run's history as Rebuild does and returns every
// message of it in stream order, each with its verdict. A run that never
// started is annotated too (its inputs are no-run or malformed). When the
// history cannot be replayed (ErrHistoryTrimmed, a definition no longer
// deployed, a token secret that cannot be read) Annotate returns the
// messages without verdicts together with the error, if it could read
// them. Info.Notes say what the verdicts assume.
func Annotate(ctx context.Context, src Source, runID string) ([]Annotated, Info, error) {
	if err := checkSource(src, runID); err != nil {
		return nil, Info{}, err
	}
	sv, err := loadSaved(ctx, src, runID)
	if err != nil {
		return nil, Info{}, err
	}
	w, err := replayHistory(ctx, src, runID, sv)
	out := make([]Annotated, len(w.msgs))
	for i, m := range w.msgs {
		out[i].Message = m
	}
	complete := w.judge != nil && len(w.judge.verdicts) == len(w.msgs)
	if err != nil && !(complete && errors.Is(err, ErrNotStarted) && !errors.Is(err, ErrHistoryTrimmed)) {
		return out, w.info, err
	}
	for i, m := range w.msgs {
		out[i].Verdict, out[i].Reason, _ = w.judge.Verdict(m.Seq)
	}
	switch {
	case err != nil:
		w.info.Notes = append(w.info.Notes, err.Error())
	case sv.rec != nil && !equalJSON(sv.rec.State, w.run.Record.State):
		at, _, _ := Diverge(sv.rec.State, w.run.Record.State)
		w.info.Notes = append(w.info.Notes, fmt.Sprintf("the rebuilt state differs from the saved one (at %q): the verdicts are the replay's and may not be what the dispatchers did (`jetflow replay %s` shows the difference)", at, runID))
	case !sv.found:
		w.info.Notes = append(w.info.Notes, "the run has no saved record: the verdicts follow stream order, as one dispatcher applies it")
	}
	return out, w.info, nil
}

func equalJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	at, av, bv := Diverge(a, b)
	return at == "" && av == "" && bv == ""
}

// A Judge gives the messages of one replay their verdicts: Step each
// message in the order the replay steps it, Skip those it does not step,
// then read Verdict. It follows the events the run buffers while busy, so
// that an event a later step consumes without effect is ignored, and one
// a later wait takes is applied, saying where.
type Judge struct {
	cfg      step.Settings
	verdicts map[uint64]judgement
	// buffer mirrors the run's buffered events: the messages that
	// brought them, oldest first.
	buffer []bufferedEvent
	// line is the run's line of inputs after the last step; bufferAt the
	// buffer after each input on it, for a reset going back there.
	line     *step.Line
	bufferAt map[uint64][]bufferedEvent
}

type judgement struct {
	verdict Verdict
	reason  string
}

type bufferedEvent struct {
	seq uint64
	typ string
}

// NewJudge returns a judge for a replay with the dispatchers' settings
// cfg; cfg.Names must be set.
func NewJudge(cfg step.Settings) *Judge {
	return &Judge{cfg: cfg.WithDefaults(), verdicts: map[uint64]judgement{}, bufferAt: map[uint64][]bufferedEvent{}}
}

// Step judges m, which a Stepper stepped with this outcome
// and reason, leaving the run after. It may revise the verdicts of
// events stepped before (buffered, and consumed now).
func (j *Judge) Step(m Message, outcome step.Outcome, why string, after step.Run) {
	v, reason := verdictOf(m.Seq, outcome, why, after)
	j.verdicts[m.Seq] = judgement{v, reason}
	if after.Line != nil {
		j.line = after.Line
	}
	if outcome != step.Applied || after.State == nil {
		j.bufferAt[m.Seq] = slices.Clone(j.buffer)
		return
	}
	defer func() { j.bufferAt[m.Seq] = slices.Clone(j.buffer) }()
	if to, ok := j.line.WentBack(m.Seq); ok {
		// The run's buffer is the one it had at that point.
		j.buffer = slices.Clone(j.bufferAt[to])
		j.verdicts[m.Seq] = judgement{VerdictApplied, fmt.Sprintf("took the run back to its state after seq %d", to)}
		return
	}
	// Every event goes through the run's buffer, which each wait drains
	// in order: at once if the run waits, or at a later step.
	if _, kind, typ, err := j.cfg.Names.ParseInput(m.Subject); err == nil && kind == subjects.KindEvent {
		j.buffer = append(j.buffer, bufferedEvent{m.Seq, typ})
	}
	left := min(len(after.State.Buffered), len(j.buffer))
	drained := j.buffer[:len(j.buffer)-left]
	j.buffer = append([]bufferedEvent(nil), j.buffer[len(j.buffer)-left:]...)
	// The ignored ones are among the drained, in the order drained; of
	// several of one type, the first are taken to be the ignored.
	ignored := after.State.Ignored
	for _, ev := range drained {
		switch {
		case len(ignored) > 0 && ignored[0].Type == ev.typ:
			reason := ReasonText(ignored[0].Reason)
			if ev.seq != m.Seq {
				reason = fmt.Sprintf("buffered while the run was busy, then consumed at seq %d without effect: %s", m.Seq, reason)
			}
			j.verdicts[ev.seq] = judgement{VerdictIgnored, reason}
			ignored = ignored[1:]
		case ev.seq != m.Seq:
			j.verdicts[ev.seq] = judgement{VerdictApplied, fmt.Sprintf("buffered while the run was busy; taken at seq %d", m.Seq)}
		}
	}
	for _, ev := range j.buffer {
		if ev.seq == m.Seq {
			j.verdicts[m.Seq] = judgement{VerdictApplied, "buffered: the run was busy; its next wait takes it"}
		}
	}
}

// Skip judges a message the replay did not step: malformed, or, with
// why, never applied (VerdictUnapplied).
func (j *Judge) Skip(m Message, why string) {
	if bad := unparsable(j.cfg, m); bad != "" {
		j.verdicts[m.Seq] = judgement{VerdictMalformed, terminated(bad)}
		return
	}
	j.verdicts[m.Seq] = judgement{VerdictUnapplied, why}
}

// unstarted judges a message of a run that has no start: malformed, or
// waiting for a run that never comes.
func (j *Judge) unstarted(m Message) {
	if bad := unparsable(j.cfg, m); bad != "" {
		j.verdicts[m.Seq] = judgement{VerdictMalformed, terminated(bad)}
		return
	}
	j.verdicts[m.Seq] = judgement{VerdictNoRun, reasonNoStart}
}

// Verdict is the verdict on the message at seq and its reason; ok is
// false for a message neither stepped nor skipped.
func (j *Judge) Verdict(seq uint64) (v Verdict, reason string, ok bool) {
	jd, ok := j.verdicts[seq]
	if reset, to, gone := j.line.Superseded(seq); ok && gone {
		was := string(jd.verdict)
		if jd.reason != "" {
			was += ": " + jd.reason
		}
		return VerdictSuperseded, fmt.Sprintf("superseded by the reset at seq %d, which took the run back to its state after seq %d (it was %s)", reset, to, was), true
	}
	return jd.verdict, jd.reason, ok
}

// verdictOf is the verdict on one step by its outcome, the reason read
// from the record after it.
func verdictOf(seq uint64, outcome step.Outcome, why string, after step.Run) (Verdict, string) {
	switch outcome {
	case step.Applied:
		return VerdictApplied, ""
	case step.Duplicate:
		return VerdictDuplicate, "the record already reflected it: a redelivery, applied once"
	case step.Malformed:
		return VerdictMalformed, terminated(why)
	case step.Failed:
		return VerdictFailed, terminated(why)
	case step.NoRun:
		return VerdictNoRun, reasonNoRun
	case step.Rejected:
		if after.Record != nil {
			if r, ok := lastFor(after.Record.Rejected, seq); ok {
				return VerdictRejected, ReasonText(r.Reason)
			}
		}
	}
	return Verdict(outcome), ReasonText(why)
}

// ReasonText is a refusal's reason as a person reads it: without the
// reducer's "message rejected: " prefix that every refusal carries.
func ReasonText(reason string) string {
	return strings.TrimPrefix(reason, run.ErrRejected.Error()+": ")
}

// lastFor is the newest entry of list for seq.
func lastFor(list []runrecord.Rejection, seq uint64) (runrecord.Rejection, bool) {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Seq == seq {
			return list[i], true
		}
	}
	return runrecord.Rejection{}, false
}

func terminated(why string) string { return "terminated by the dispatchers: " + why }

// unparsable says why a dispatcher terminates m before it reaches a run
// (too large, or malformed), or "" if it parses.
func unparsable(cfg step.Settings, m Message) string {
	if len(m.Data) > cfg.MaxInputBytes {
		return fmt.Sprintf("input of %d bytes is larger than the dispatcher's limit of %d bytes", len(m.Data), cfg.MaxInputBytes)
	}
	if err := step.Check(cfg.Names, m.Subject, m.Header, m.Data); err != nil {
		return err.Error()
	}
	return ""
}

// Said is the verdict with its reason, as history prints it:
// "applied", "rejected: forged or stale token". Empty without a verdict.
func (a Annotated) Said() string {
	if a.Verdict == "" || a.Reason == "" {
		return string(a.Verdict)
	}
	return string(a.Verdict) + ": " + oneLine(a.Reason, 240)
}

// Line is the message as Line prints it, followed by its verdict:
//
//	2026-11-29T17:05:57.114Z        2  result  node=stock attempt=1 ok output=true  | rejected: forged or stale token
//
// A message that does not parse shows its body instead of a summary.
// Without a verdict it is Line's.
func (a Annotated) Line(names subjects.Names) string {
	if a.Verdict == "" {
		return Line(names, a.Message)
	}
	kind, summary := Summarize(names, a.Message)
	if step.Check(names, a.Subject, a.Header, a.Data) != nil {
		// The verdict says why it does not parse.
		summary = "body=" + compact(a.Data, 80)
		if len(a.Data) == 0 {
			summary = "(empty body)"
		}
	}
	return fmt.Sprintf("%s %8d  %-6s  %s  | %s", a.Time.UTC().Format("2006-01-02T15:04:05.000Z"), a.Seq, kind, summary, a.Said())
}
