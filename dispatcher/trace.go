package dispatcher

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/tracing"
)

// CAS outcomes, the jetflow.cas attribute of an apply span.
const (
	casCreated  = "created"  // the run's record was created
	casUpdated  = "updated"  // the record was replaced at the revision read
	casConflict = "conflict" // another write came first: the input is applied again
	casNone     = "none"     // nothing was written (a duplicate, a refusal of a run with no record)
)

// delivery is what handle knows of an input that its trace needs: how
// often it was delivered and the span of the worker attempt a result
// carries (its traceparent header). It travels in the step's context,
// only when tracing is on.
type delivery struct {
	n       uint64
	attempt trace.SpanContext
}

type deliveryKey struct{}

// withDelivery is handle's half of the trace: nothing when tracing is
// off, so that the hot path allocates nothing for it.
func (d *Dispatcher) withDelivery(ctx context.Context, n uint64, h nats.Header) context.Context {
	if d.tracer == nil {
		return ctx
	}
	dv := delivery{n: n}
	if h != nil && h.Get(tracing.HeaderTraceparent) != "" {
		dv.attempt = trace.SpanContextFromContext(tracing.Extract(context.Background(), h))
	}
	return context.WithValue(ctx, deliveryKey{}, dv)
}

// stepTrace is the span of one load-apply-save pass of an input. A nil
// *stepTrace (tracing off) does nothing.
type stepTrace struct {
	d      *Dispatcher
	in     *step.Input
	seq    uint64
	began  time.Time
	before *runrecord.Record
	st     *run.State
	res    step.Result
	cas    string
	span   trace.Span
}

func (d *Dispatcher) beginTrace(in *step.Input, seq uint64) *stepTrace {
	if d.tracer == nil {
		return nil
	}
	return &stepTrace{d: d, in: in, seq: seq, began: time.Now(), cas: casNone}
}

// loaded notes the record the pass read (nil when the run has none).
func (t *stepTrace) loaded(c cached, found bool) {
	if t != nil && found {
		t.before, t.st = c.rec, c.st
	}
}

// open starts the pass's span and returns ctx holding it, so that the
// invocations the pass publishes carry it. root says the pass created
// the run: its span is the run's root span, with the ids the run
// derives. Every other span is a child of that root.
func (t *stepTrace) open(ctx context.Context, res step.Result, root bool) context.Context {
	if t == nil || t.span != nil {
		return ctx
	}
	t.res = res
	in := t.in
	prefix := t.d.cfg.Names.Prefix()
	dv, _ := ctx.Value(deliveryKey{}).(delivery)
	var sctx context.Context
	if root {
		sctx = tracing.WithRunRoot(ctx, prefix, in.RunID)
	} else {
		sctx = trace.ContextWithRemoteSpanContext(ctx, tracing.RunRoot(prefix, in.RunID))
	}
	f := in.Facts()
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs,
		tracing.KeyRunID.String(in.RunID),
		tracing.KeyKind.String(in.Kind),
		tracing.KeySeq.Int64(int64(t.seq)),
	)
	if dv.n > 0 {
		attrs = append(attrs, tracing.KeyDelivery.Int64(int64(dv.n)))
	}
	if t.before != nil {
		if ws, err := step.StatusOf(in.RunID, t.before, t.st); err == nil {
			attrs = append(attrs, tracing.KeyStatusBefore.String(ws.Status), tracing.KeyStateBefore.String(ws.State))
		}
	}
	if f.Reason != "" {
		attrs = append(attrs, tracing.KeyReason.String(truncate(f.Reason, maxLogged)))
	}
	if f.Operator != "" {
		attrs = append(attrs, tracing.KeyOperator.String(truncate(f.Operator, maxLogged)))
	}
	if in.Kind == subjects.KindReset {
		attrs = append(attrs, tracing.KeyResetTo.Int64(int64(in.ResetTo())))
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(t.began), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if dv.attempt.IsValid() {
		// A result: the worker's attempt span it answers.
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: dv.attempt}))
	}
	sctx, t.span = t.d.tracer.Start(sctx, spanName(in.Kind), opts...)
	switch {
	case f.Timer != "":
		t.span.AddEvent(tracing.EventTimerFired, trace.WithAttributes(tracing.KeyTimer.String(f.Timer), tracing.KeyDeadline.Float64(f.Deadline)))
	case f.Event != "":
		t.span.AddEvent(tracing.EventEvent, trace.WithAttributes(tracing.KeyEvent.String(truncate(f.Event, maxLogged))))
	case f.Activation != "":
		// A result is only screened later, by its token: bound what a
		// forger could make the span carry.
		ev := []attribute.KeyValue{tracing.KeyActivation.String(truncate(f.Activation, maxLogged)), tracing.KeyNode.String(truncate(f.Node, maxLogged)), tracing.KeyAttempt.Int(f.Attempt), attribute.Bool("jetflow.failed", f.Failed)}
		if f.ErrorCode != "" {
			ev = append(ev, tracing.KeyErrorCode.String(truncate(f.ErrorCode, maxLogged)))
		}
		t.span.AddEvent(tracing.EventResult, trace.WithAttributes(ev...))
	}
	for _, ig := range res.Ignored {
		t.span.AddEvent(tracing.EventIgnored, trace.WithAttributes(tracing.KeyEvent.String(truncate(ig.Type, maxLogged)), tracing.KeyReason.String(truncate(ig.Reason, maxLogged))))
	}
	return sctx
}

func spanName(kind string) string {
	switch kind {
	case subjects.KindStart:
		return tracing.SpanStart
	case subjects.KindRedrive:
		return tracing.SpanRedrive
	case subjects.KindReset:
		return tracing.SpanReset
	}
	return tracing.SpanApply
}

// saved notes how the pass's write went.
func (t *stepTrace) saved(exists bool, err error) {
	if t == nil {
		return
	}
	switch {
	case errors.Is(err, errConflict):
		t.cas = casConflict
	case err != nil:
	case exists:
		t.cas = casUpdated
	default:
		t.cas = casCreated
	}
}

// end closes the span with the pass's outcome. A pass that ended before
// opening its span (a load that failed, a run not there yet) opens it
// now when there is something to see: an error other than the wait for
// a run's start.
func (t *stepTrace) end(ctx context.Context, outcome string, err error) {
	if t == nil {
		return
	}
	if t.span == nil {
		if errors.Is(err, errNoRun) || errors.Is(err, errPostponed) {
			return
		}
		t.open(ctx, t.res, false)
	}
	sp := t.span
	attrs := []attribute.KeyValue{tracing.KeyCAS.String(t.cas)}
	if outcome != "" {
		attrs = append(attrs, tracing.KeyOutcome.String(outcome))
	}
	if r := t.res.Run; r.Record != nil && (outcome == outcomeApplied || outcome == outcomeRejected) {
		if ws, serr := step.StatusOf(t.in.RunID, r.Record, r.State); serr == nil {
			attrs = append(attrs,
				tracing.KeyStatusAfter.String(ws.Status), tracing.KeyStateAfter.String(ws.State),
				tracing.KeyWorkflow.String(ws.Workflow), tracing.KeyRevision.String(ws.Revision))
		}
	}
	if outcome == outcomeRejected && t.res.Reason != nil {
		attrs = append(attrs, attribute.String("jetflow.rejected", truncate(t.res.Reason.Error(), maxLogged)))
	}
	sp.SetAttributes(attrs...)
	if err != nil && !errors.Is(err, errConflict) {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}
