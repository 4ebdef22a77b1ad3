package replay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// TestAnnotateGivesEveryInputItsVerdict sends a run what users send by
// mistake (a result with a forged token, a malformed one, a message on
// no input subject, an event nobody waits for, an event after the end)
// among its proper inputs, and checks the verdict Annotate gives each,
// in stream order.
func TestAnnotateGivesEveryInputItsVerdict(t *testing.T) {
	b := setup(t, provision.ProvisionOptions{ErasableHistory: true}, 1, 0)
	nc, err := nats.Connect(b.f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A plain message, as any client may send, but sent as a request so
	// that the stream's acknowledgement says it is stored before the
	// history is read (a flush only says the server received it).
	publish := func(subject string, data []byte) {
		t.Helper()
		ack, err := nc.Request(subject, data, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(ack.Data, []byte(`"error"`)) {
			t.Fatalf("publish to %s: %s", subject, ack.Data)
		}
	}

	const id = "ann-1"
	if err := b.f.Client.StartRun(b.ctx, "event", id, nil); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, id, wire.StatusWaiting)
	forged, _ := json.Marshal(wire.Result{Activation: "a1", Node: "task", Attempt: 1, Token: "forged", Output: json.RawMessage(`42`)})
	publish(b.f.Names.Result(id), forged)
	b.waitRejected(t, id, 1)
	publish(b.f.Names.Result(id), []byte(`[]`))
	b.waitRejected(t, id, 2)
	publish(strings.TrimSuffix(b.f.Names.Start(id), "start")+"bogus", []byte(`{}`))
	b.send(t, id, "nope", nil)
	b.send(t, id, "go", map[string]any{"n": 5})
	if st := b.wait(t, id); st.Status != wire.StatusDone || string(st.Result) != "10" {
		t.Fatalf("run ended %s with %s", st.Status, st.Result)
	}
	b.send(t, id, "late", nil)
	b.waitRejected(t, id, 3)
	b.settled(t)

	msgs, info, err := replay.Annotate(b.ctx, b.src, id)
	if err != nil {
		t.Fatalf("annotate: %v (notes %q)", err, info.Notes)
	}
	for _, m := range msgs {
		t.Log(m.Line(b.f.Names))
	}
	want := []struct {
		kind    string
		verdict replay.Verdict
		reason  string // a part of it
	}{
		{"start", replay.VerdictApplied, ""},
		{"result", replay.VerdictRejected, step.ReasonForgedToken},
		{"result", replay.VerdictRejected, "malformed input: result body: expected a JSON object"},
		{"?", replay.VerdictMalformed, "terminated by the dispatchers: malformed input"},
		{"event", replay.VerdictIgnored, `event "nope" matched no transition`},
		{"event", replay.VerdictApplied, ""},
		{"result", replay.VerdictApplied, ""},
		{"event", replay.VerdictRejected, `run "ann-1" is done`},
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	for i, w := range want {
		m := msgs[i]
		kind, _ := replay.Summarize(b.f.Names, m.Message)
		if kind != w.kind || m.Verdict != w.verdict || !strings.Contains(m.Reason, w.reason) || (w.reason == "") != (m.Reason == "") {
			t.Errorf("message %d (seq %d): %s %s %q, want %s %s with %q", i, m.Seq, kind, m.Verdict, m.Reason, w.kind, w.verdict, w.reason)
		}
	}
	if got := msgs[1].Reason; got != step.ReasonForgedToken {
		t.Errorf("forged result's reason %q, want %q", got, step.ReasonForgedToken)
	}
	if line := msgs[1].Line(b.f.Names); !strings.HasSuffix(line, "result  node=task attempt=1 ok output=42  | rejected: forged or stale token") {
		t.Errorf("line of the forged result: %q", line)
	}
	if line := msgs[2].Line(b.f.Names); !strings.HasSuffix(line, "result  body=[]  | rejected: malformed input: result body: expected a JSON object") {
		t.Errorf("line of the malformed result: %q", line)
	}
	// The verdicts agree with the record: what it lists as rejected is
	// rejected, with its reason.
	rec, err := runrecord.Decode(b.record(t, id))
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[uint64]replay.Annotated{}
	for _, m := range msgs {
		bySeq[m.Seq] = m
	}
	for _, r := range rec.Rejected {
		if m := bySeq[r.Seq]; m.Verdict != replay.VerdictRejected || m.Reason != replay.ReasonText(r.Reason) {
			t.Errorf("record rejects seq %d (%s), history says %s %q", r.Seq, r.Reason, m.Verdict, m.Reason)
		}
	}
	b.checkEqual(t, id)

	t.Run("a run that never started", func(t *testing.T) {
		b.send(t, "ghost", "go", nil)
		publish(strings.TrimSuffix(b.f.Names.Start("ghost"), "start")+"bogus", nil)
		msgs, info, err := replay.Annotate(b.ctx, b.src, "ghost")
		if err != nil || len(msgs) != 2 {
			t.Fatalf("annotate: %v, %d messages", err, len(msgs))
		}
		if m := msgs[0]; m.Verdict != replay.VerdictNoRun || !strings.Contains(m.Reason, "holds no start") {
			t.Errorf("event for no run: %s %q", m.Verdict, m.Reason)
		}
		if m := msgs[1]; m.Verdict != replay.VerdictMalformed {
			t.Errorf("bogus message for no run: %s %q", m.Verdict, m.Reason)
		}
		if len(info.Notes) == 0 || !strings.Contains(info.Notes[len(info.Notes)-1], "never started") {
			t.Errorf("notes %q", info.Notes)
		}
	})

	t.Run("trimmed history", func(t *testing.T) {
		const id = "ann-trim"
		if err := b.f.Client.StartRun(b.ctx, "one", id, 2); err != nil {
			t.Fatal(err)
		}
		b.wait(t, id)
		in := b.inputStream(t)
		for _, subject := range b.f.Names.StoredStarts(id, provision.Partitions(in.CachedInfo().Config)) {
			if err := in.Purge(b.ctx, jetstream.WithPurgeSubject(subject)); err != nil {
				t.Fatal(err)
			}
		}
		msgs, _, err := replay.Annotate(b.ctx, b.src, id)
		if !errors.Is(err, replay.ErrHistoryTrimmed) || len(msgs) != 1 || msgs[0].Verdict != "" {
			t.Fatalf("annotate after the start was purged: %v, %+v", err, msgs)
		}
		if line := msgs[0].Line(b.f.Names); line != replay.Line(b.f.Names, msgs[0].Message) {
			t.Errorf("line without a verdict %q", line)
		}
	})
}

// waitRejected waits until run id's record lists n rejections.
func (b *bundle) waitRejected(t *testing.T, id string, n int) {
	t.Helper()
	natstest.WaitFor(t, bound, fmt.Sprintf("%s: %d rejections", id, n), func() error {
		rec, err := runrecord.Decode(b.record(t, id))
		if err != nil {
			return err
		}
		if len(rec.Rejected) < n {
			return fmt.Errorf("rejections %+v", rec.Rejected)
		}
		return nil
	})
}

// TestJudgeFollowsBufferedEvents: an event that comes while the run is
// busy waits in its buffer; the step that drains it settles its verdict.
func TestJudgeFollowsBufferedEvents(t *testing.T) {
	t.Parallel()
	j := replay.NewJudge(step.Settings{Names: lineNames}.WithDefaults())
	rec := &runrecord.Record{}
	after := func(buffered []string, ignored ...string) step.Run {
		st := &run.State{}
		for _, typ := range buffered {
			st.Buffered = append(st.Buffered, run.Event{Type: typ})
		}
		for _, typ := range ignored {
			st.Ignored = append(st.Ignored, run.Ignored{Type: typ, Reason: fmt.Sprintf("event %q matched no transition", typ)})
		}
		return step.Run{Record: rec, State: st}
	}
	msg := func(seq uint64, subject string) replay.Message { return replay.Message{Seq: seq, Subject: subject} }
	j.Step(msg(1, lineNames.Start("r")), step.Applied, "", after(nil))
	j.Step(msg(2, lineNames.Event("r", "a")), step.Applied, "", after([]string{"a"}))
	j.Step(msg(3, lineNames.Event("r", "b")), step.Applied, "", after([]string{"a", "b"}))
	j.Step(msg(4, lineNames.Event("r", "c")), step.Applied, "", after([]string{"a", "b", "c"}))
	// The result's step drains a (taken) and b (ignored); c stays.
	j.Step(msg(5, lineNames.Result("r")), step.Applied, "", after([]string{"c"}, "b"))
	// A timer's step drains c, which it ignores.
	j.Step(msg(6, lineNames.Timer("r")), step.Applied, "", after(nil, "c"))
	// An event while the run waits is drained by its own step.
	j.Step(msg(7, lineNames.Event("r", "d")), step.Applied, "", after(nil, "d"))
	j.Skip(msg(8, lineNames.Event("r", "e")), "never applied")
	j.Skip(replay.Message{Seq: 9, Subject: lineNames.Result("r"), Data: []byte(`[]`)}, "never applied")
	// A rejected step changes nothing, though its state is the one before.
	j.Step(msg(10, lineNames.Event("r", "f")), step.Rejected, "message rejected: run is done", after(nil, "d"))
	cases := []struct {
		seq     uint64
		verdict replay.Verdict
		reason  string
	}{
		{1, replay.VerdictApplied, ""},
		{2, replay.VerdictApplied, "buffered while the run was busy; taken at seq 5"},
		{3, replay.VerdictIgnored, `buffered while the run was busy, then consumed at seq 5 without effect: event "b" matched no transition`},
		{4, replay.VerdictIgnored, `buffered while the run was busy, then consumed at seq 6 without effect: event "c" matched no transition`},
		{5, replay.VerdictApplied, ""},
		{6, replay.VerdictApplied, ""},
		{7, replay.VerdictIgnored, `event "d" matched no transition`},
		{8, replay.VerdictUnapplied, "never applied"},
		{9, replay.VerdictMalformed, "terminated by the dispatchers: malformed input: result body: expected a JSON object"},
		{10, replay.VerdictRejected, "run is done"},
	}
	for _, c := range cases {
		v, reason, ok := j.Verdict(c.seq)
		if !ok || v != c.verdict || reason != c.reason {
			t.Errorf("seq %d: %s %q, want %s %q", c.seq, v, reason, c.verdict, c.reason)
		}
	}
	if _, _, ok := j.Verdict(11); ok {
		t.Error("a verdict on a message never judged")
	}
}

// TestJudgeReadsTheRecordsReasons: a rejection's reason is the record's,
// without the reducer's prefix; outcomes that never reach the reducer
// say why the dispatchers terminate them.
func TestJudgeReadsTheRecordsReasons(t *testing.T) {
	t.Parallel()
	rec := &runrecord.Record{Rejected: []runrecord.Rejection{{Seq: 3, Kind: "result", Reason: "message rejected: " + step.ReasonForgedToken}}}
	cases := []struct {
		outcome step.Outcome
		why     string
		verdict replay.Verdict
		reason  string
	}{
		{step.Rejected, "message rejected: something else", replay.VerdictRejected, step.ReasonForgedToken},
		{step.Duplicate, "", replay.VerdictDuplicate, "the record already reflected it: a redelivery, applied once"},
		{step.Malformed, "malformed input: x", replay.VerdictMalformed, "terminated by the dispatchers: malformed input: x"},
		{step.Failed, "reducer: boom", replay.VerdictFailed, "terminated by the dispatchers: reducer: boom"},
		{step.NoRun, "", replay.VerdictNoRun, "the run had no record at that point: the dispatchers terminate such an input, after waiting for the start if the stream holds one before it"},
	}
	for _, c := range cases {
		j := replay.NewJudge(step.Settings{Names: lineNames}.WithDefaults())
		j.Step(replay.Message{Seq: 3, Subject: lineNames.Result("r")}, c.outcome, c.why, step.Run{Record: rec})
		if v, reason, _ := j.Verdict(3); v != c.verdict || reason != c.reason {
			t.Errorf("%s: %s %q, want %s %q", c.outcome, v, reason, c.verdict, c.reason)
		}
	}
}
