package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// badInput is one hostile message and how it must be refused: terminated
// with a reason (the server's termination advisory records it), rejected
// into a run's record with a reason, or refused at publish.
type badInput struct {
	name       string
	subject    string
	data       []byte
	terminated string // reason substring of the termination advisory
	rejectedOn string // run whose record must hold the rejection
	reason     string // reason substring of that rejection
	seq        uint64 // input stream sequence, once published
	stream     string
}

// TestBadInput publishes garbage, wrong JSON types, inputs for unknown
// runs and activations, results for an old visit, forged timers and
// invocations, and oversized payloads on every subject, beside good runs.
// Each is refused with a recorded reason; the good runs finish, and the
// runs the bad input aimed at carry on as if it never came.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t, options{
		provision:  provision.ProvisionOptions{MaxMsgSize: 256 << 10},
		dispatcher: dispatcher.Config{MaxInputBytes: 64 << 10},
	})
	terms := e.watchTerminations(t)
	nc, err := nats.Connect(e.f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(b *badInput) {
		t.Helper()
		ack, err := js.Publish(e.ctx, b.subject, b.data)
		if err != nil {
			t.Fatalf("%s: publish: %v", b.name, err)
		}
		b.seq, b.stream = ack.Sequence, ack.Stream
	}

	const good = 20
	for i := range good {
		e.start(t, "fan", fmt.Sprintf("good-%d", i), i)
	}
	e.start(t, "forever", "target", 1)
	e.start(t, "rounds", "rounds", map[string]any{"n": 0})
	e.start(t, "approval", "early", map[string]any{"order": 1})
	for _, id := range []string{"target", "rounds", "early"} {
		e.waitStatus(t, id, wire.StatusWaiting, 15*time.Second)
	}

	n := e.names
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	validResult := `{"activation":"[\"ghost\",\"/states/a\",1]","node":"task","attempt":1,"token":"t","output":1}`
	// Malformed inputs addressed to a run that exists are refused on it,
	// where status and history show them; others are terminated.
	inputs := []*badInput{
		{name: "start garbage", subject: n.Start("g1"), data: []byte("\x00\xffnot json"), terminated: "start body"},
		{name: "start wrong types", subject: n.Start("g2"), data: []byte(`{"workflow":5}`), terminated: "start body"},
		{name: "start not an object", subject: n.Start("g3"), data: []byte(`[1,2]`), terminated: "expected a JSON object"},
		{name: "start unknown workflow", subject: n.Start("g4"), data: []byte(`{"workflow":"nope"}`), terminated: "unknown workflow"},
		{name: "start truncated input", subject: n.Start("g5"), data: []byte(`{"workflow":"one","input":[[[`), terminated: "start body"},
		{name: "start run id too long", subject: n.Start(strings.Repeat("r", 200)), data: []byte(`{"workflow":"one"}`), terminated: "run id"},
		{name: "unknown input kind", subject: n.Prefix() + ".in.target.bogus", data: []byte(`{}`), terminated: "unknown input kind"},
		{name: "event without a type", subject: n.Prefix() + ".in.target.event", data: []byte(`{}`), terminated: "event.<type>"},
		{name: "event garbage", subject: n.Event("target", "x"), data: []byte("\x00\xff"), rejectedOn: "target", reason: "event payload"},
		{name: "event nested too deep", subject: n.Event("target", "x"), data: []byte(deep), rejectedOn: "target", reason: "event payload"},
		{name: "event over the dispatcher's limit", subject: n.Event("target", "x"), data: []byte(`"` + strings.Repeat("x", 100<<10) + `"`), rejectedOn: "target", reason: "larger than the dispatcher's limit"},
		{name: "result garbage", subject: n.Result("target"), data: []byte("\x00"), rejectedOn: "target", reason: "result body"},
		{name: "result wrong types", subject: n.Result("target"), data: []byte(`{"activation":7}`), rejectedOn: "target", reason: "result body"},
		{name: "result without activation", subject: n.Result("target"), data: []byte(`{"node":"task","attempt":1,"output":1}`), rejectedOn: "target", reason: "activation is empty"},
		{name: "result with output and error", subject: n.Result("target"), data: []byte(`{"activation":"a","node":"task","attempt":1,"output":1,"error":{"message":"x"}}`), rejectedOn: "target", reason: "both output and error"},
		{name: "timer garbage", subject: n.Timer("target"), data: []byte("\x00"), rejectedOn: "target", reason: "timer body"},
		{name: "timer wrong types", subject: n.Timer("target"), data: []byte(`{"timer":true}`), rejectedOn: "target", reason: "timer body"},
		{name: "timer naming no timer", subject: n.Timer("target"), data: []byte(`{}`), rejectedOn: "target", reason: "names no timer"},
		{name: "cancel garbage", subject: n.Cancel("target"), data: []byte("\x00"), rejectedOn: "target", reason: "cancel body"},
		{name: "cancel wrong types", subject: n.Cancel("target"), data: []byte(`{"reason":["x"]}`), rejectedOn: "target", reason: "cancel body"},
		{name: "result for an unknown run", subject: n.Result("ghost"), data: []byte(validResult), terminated: "no run ghost"},
		{name: "event for an unknown run", subject: n.Event("ghost2", "e"), data: []byte(`{}`), terminated: "no run ghost2"},
		{
			name: "result for an unknown activation", subject: n.Result("target"), rejectedOn: "target", reason: step.ReasonForgedToken,
			data: []byte(`{"activation":"[\"target\",\"/states/nowhere\",1]","node":"task","attempt":1,"token":"forged","output":1}`),
		},
		{name: "timer never armed", subject: n.Timer("target"), data: []byte(`{"timer":"t9","deadline":1}`), rejectedOn: "target", reason: "no longer armed"},
		{name: "second start of a run", subject: n.Start("target"), data: []byte(`{"workflow":"forever","input":2}`), rejectedOn: "target", reason: "already exists"},
		{name: "early fire of an armed timer", subject: n.Timer("early"), data: earlyFire(t, e, "early"), rejectedOn: "early", reason: "deadline"},
		// The workers' subjects.
		{name: "invocation garbage", subject: n.Task("double", "1"), data: []byte("\x00garbage"), terminated: "malformed invocation"},
		{
			name: "invocation replying elsewhere", subject: n.Task("double", "1"), terminated: "is not the result subject",
			data: []byte(`{"run":"target","activation":"a","node":"task","task":"double","version":"1","attempt":1,"input":1,"token":"x","reply":"elsewhere"}`),
		},
		{
			name: "forged invocation", subject: n.Task("double", "1"), rejectedOn: "target", reason: step.ReasonForgedToken,
			data: []byte(`{"run":"target","activation":"a","node":"task","task":"double","version":"1","attempt":1,"input":1,"token":"x","reply":"` + n.Result("target") + `"}`),
		},
	}
	for _, b := range inputs {
		publish(b)
	}
	// Results of the run's first visit and a repeat of its second,
	// re-sent with their genuine tokens after the run moved on.
	first := lastOn(t, js, n.InputStream(), n.Result("rounds"))
	if err := e.f.Client.SendEvent(e.ctx, "rounds", "again", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 15*time.Second, "second round of rounds", func() error {
		if rec := e.record(t, "rounds"); rec == nil || len(rec.Applied) < 4 {
			return errors.New("not yet")
		}
		return nil
	})
	second := lastOn(t, js, n.InputStream(), n.Result("rounds"))
	for i, data := range [][]byte{first, second} {
		b := &badInput{name: fmt.Sprintf("result of visit %d re-sent", i+1), subject: n.Result("rounds"), data: data, rejectedOn: "rounds", reason: "not in flight"}
		publish(b)
		inputs = append(inputs, b)
	}
	// Over the stream's and the server's limits: refused at publish.
	_, err = js.Publish(e.ctx, n.Event("target", "x"), []byte(`"`+strings.Repeat("x", 300<<10)+`"`))
	var ae *jetstream.APIError
	if !errors.As(err, &ae) || ae.ErrorCode != jetstream.JSErrCodeStreamMessageExceedsMaximum {
		t.Errorf("an event over the stream's max message size: %v, want it refused by the stream", err)
	}
	if _, err = js.Publish(e.ctx, n.Event("target", "x"), make([]byte, 2<<20)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("an event over the server's max payload: %v, want %v", err, nats.ErrMaxPayload)
	}

	// Inputs published elsewhere (a forged invocation) are rejected
	// through a result of their own.
	known := map[uint64]bool{}
	for _, b := range inputs {
		if b.stream == n.InputStream() {
			known[b.seq] = true
		}
	}
	for _, b := range inputs {
		t.Run(b.name, func(t *testing.T) {
			if b.terminated != "" {
				reason := terms.wait(t, b.stream, b.seq, 20*time.Second)
				if !strings.Contains(reason, b.terminated) {
					t.Errorf("terminated with reason %q, want it to say %q", reason, b.terminated)
				}
				return
			}
			rej := waitRejection(t, e, b.rejectedOn, func(r runrecord.Rejection) bool {
				if b.stream == n.InputStream() {
					return r.Seq == b.seq
				}
				return !known[r.Seq] && strings.Contains(r.Reason, b.reason)
			})
			if !strings.Contains(rej.Reason, b.reason) {
				t.Errorf("rejected with reason %q, want it to say %q", rej.Reason, b.reason)
			}
		})
	}

	// The runs beside and under the bad input are unharmed.
	for i := range good {
		id := fmt.Sprintf("good-%d", i)
		st := e.wait(t, id, 30*time.Second)
		want := fmt.Sprintf(`{"d":%d,"n":%d,"s":%d,"sum":%d}`, 2*i, -i, i*i, 2*i+i*i-i)
		if st.Status != wire.StatusDone || string(st.Result) != want {
			t.Errorf("run %s: %+v, want done with %s", id, st, want)
		}
		e.checkRecord(t, id, 0)
		checkReplay(t, e, id)
	}
	if err := e.f.Client.SendEvent(e.ctx, "rounds", "stop", nil); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "rounds", 15*time.Second); st.Status != wire.StatusDone || string(st.Result) != `{"n":2}` {
		t.Errorf("rounds: %+v, want done with {\"n\":2}", st)
	}
	if st, err := e.f.Client.Status(e.ctx, "target"); err != nil || st.Status != wire.StatusWaiting {
		t.Errorf("target: %+v %v, want still waiting", st, err)
	}
	if err := e.f.Client.Cancel(e.ctx, "target", "end of test"); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "target", 15*time.Second); st.Status != wire.StatusCancelled {
		t.Errorf("target: %+v, want cancelled", st)
	}
	for _, id := range []string{"target", "rounds", "early"} {
		checkReplay(t, e, id)
	}

	// Counted and logged too.
	e.consumerSettled(t, 15*time.Second)
	// 12 malformed inputs addressed to "target" are rejected on it.
	for outcome, want := range map[string]float64{"malformed": 7, "unknown_run": 2, "unknown_workflow": 1, "rejected": 19} {
		if got := e.messages(t, "", outcome); got != want {
			t.Errorf("%v inputs counted %s, want %v", got, outcome, want)
		}
	}
	if got := len(e.logs.lines("malformed input terminated")); got != 7 {
		t.Errorf("%d malformed inputs logged, want 7", got)
	}
	if got := len(e.logs.lines("terminating a malformed invocation")); got != 2 {
		t.Errorf("%d malformed invocations logged by the workers, want 2", got)
	}
}

// earlyFire forges the fire of the run's armed timer, long before its
// deadline, with the exact id and deadline its record shows.
func earlyFire(t *testing.T, e *env, runID string) []byte {
	t.Helper()
	rec := e.record(t, runID)
	var st struct {
		Control struct {
			Timers []struct {
				Token int64   `json:"token"`
				At    float64 `json:"at"`
			} `json:"timers"`
		} `json:"control"`
	}
	if err := json.Unmarshal(rec.State, &st); err != nil || len(st.Control.Timers) != 1 {
		t.Fatalf("run %s: no armed timer in %s (%v)", runID, rec.State, err)
	}
	tm := st.Control.Timers[0]
	data, _ := json.Marshal(wire.Timer{Timer: fmt.Sprintf("t%d", tm.Token), Deadline: tm.At})
	return data
}

// lastOn returns the body of the last message on subject.
func lastOn(t *testing.T, js jetstream.JetStream, stream, subject string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	// As stored: a partitioned stream keeps it under the run's partition.
	stored := subjects.Must("").StoredInput(subject, provision.Partitions(s.CachedInfo().Config))
	m, err := s.GetLastMsgForSubject(ctx, stored)
	if err != nil {
		t.Fatalf("last message on %s: %v", stored, err)
	}
	return m.Data
}

// waitRejection waits until the run's record lists a rejection that
// matches, and returns it.
func waitRejection(t *testing.T, e *env, runID string, match func(runrecord.Rejection) bool) runrecord.Rejection {
	t.Helper()
	var found runrecord.Rejection
	natstest.WaitFor(t, 20*time.Second, "rejection on run "+runID, func() error {
		rec := e.record(t, runID)
		if rec == nil {
			return errors.New("no record")
		}
		for _, r := range rec.Rejected {
			if match(r) {
				found = r
				return nil
			}
		}
		return fmt.Errorf("rejections %+v", rec.Rejected)
	})
	return found
}

// terminations collects the server's advisories of terminated messages,
// by stream and sequence.
type terminations struct {
	mu      sync.Mutex
	reasons map[string]string
}

func (e *env) watchTerminations(t *testing.T) *terminations {
	t.Helper()
	tr := &terminations{reasons: map[string]string{}}
	sub, err := e.f.Conn.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>", func(m *nats.Msg) {
		var adv struct {
			Stream    string `json:"stream"`
			StreamSeq uint64 `json:"stream_seq"`
			Reason    string `json:"reason"`
		}
		if json.Unmarshal(m.Data, &adv) == nil {
			tr.mu.Lock()
			tr.reasons[fmt.Sprintf("%s/%d", adv.Stream, adv.StreamSeq)] = adv.Reason
			tr.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.f.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return tr
}

// wait returns the reason the message at stream/seq was terminated with.
func (tr *terminations) wait(t *testing.T, stream string, seq uint64, timeout time.Duration) string {
	t.Helper()
	key := fmt.Sprintf("%s/%d", stream, seq)
	var reason string
	natstest.WaitFor(t, timeout, "termination of "+key, func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		r, ok := tr.reasons[key]
		if !ok {
			return errors.New("no advisory")
		}
		reason = r
		return nil
	})
	return reason
}
