package provision_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Anyone allowed to publish one run input can set any header on it, so
// the input stream must refuse every header that acts beyond the message
// itself, or make it harmless. The list is nats-server 2.15.2's
// (server/stream.go, "Headers for published messages" and
// "Headers for scheduled messages"; jetstream_api.go for
// Nats-Required-Api-Level): each case publishes an event carrying it and
// checks the outcome, then that the run's other inputs are intact and that
// nothing landed on its timer subject.
func TestInputStreamRefusesHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	n := b.names
	first, err := b.js.Publish(b.ctx, n.Start("r1"), []byte(`{"workflow":"w"}`), jetstream.WithMsgID("start/r1/secret-nonce"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := b.js.Stream(b.ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	refused := []struct {
		name   string
		header map[string]string
	}{
		{"roll up the stream", map[string]string{"Nats-Rollup": "all"}},
		{"roll up the subject", map[string]string{"Nats-Rollup": "sub"}},
		{"schedule a repeating fire", map[string]string{"Nats-Schedule": "@every 1s", "Nats-Schedule-Target": n.Timer("r1")}},
		{"schedule a fire now", map[string]string{"Nats-Schedule": "@at " + past, "Nats-Schedule-Target": n.Timer("r1")}},
		{"schedule a cron fire", map[string]string{"Nats-Schedule": "* * * * * *", "Nats-Schedule-Target": n.Timer("r1"), "Nats-Schedule-Time-Zone": "UTC"}},
		{"cancel a schedule", map[string]string{"Nats-Schedule-Next": "purge", "Nats-Scheduler": n.Schedule("r1", "t1")}},
		{"claim to be a fire", map[string]string{"Nats-Scheduler": n.Schedule("r1", "t1")}},
		{"announce a next fire", map[string]string{"Nats-Schedule-Next": past}},
		{"expire itself", map[string]string{"Nats-TTL": "1s"}},
		{"never expire", map[string]string{"Nats-TTL": "never"}},
		{"count", map[string]string{"Nats-Incr": "1"}},
		{"atomic batch", map[string]string{"Nats-Batch-Id": "b1", "Nats-Batch-Sequence": "1", "Nats-Batch-Commit": "1"}},
		{"claim to be sourced", map[string]string{"Nats-Stream-Source": n.TimerStream() + " 1 > > " + n.Timer("r1")}},
		{"expect another stream", map[string]string{"Nats-Expected-Stream": n.TimerStream()}},
		{"expect a last sequence", map[string]string{"Nats-Expected-Last-Sequence": "999"}},
		{"expect a subject sequence", map[string]string{"Nats-Expected-Last-Subject-Sequence": "999"}},
		{"expect another subject's sequence", map[string]string{"Nats-Expected-Last-Subject-Sequence": "999", "Nats-Expected-Last-Subject-Sequence-Subject": n.Start("r1")}},
		{"expect a last message id", map[string]string{"Nats-Expected-Last-Msg-Id": "nope"}},
	}
	for i, c := range refused {
		m := nats.NewMsg(n.Event("r1", fmt.Sprintf("e%d", i)))
		m.Data = []byte(`{"timer":"t1"}`)
		for k, v := range c.header {
			m.Header.Set(k, v)
		}
		if ack, err := b.js.PublishMsg(b.ctx, m); err == nil {
			t.Errorf("%s (%v): stored as %d, want a refusal", c.name, c.header, ack.Sequence)
		} else {
			t.Logf("%s: refused: %v", c.name, err)
		}
	}
	// The Nats-Expected-* refusals above affect only the publisher's own
	// message, but their errors tell it the stream's last sequence, a
	// subject's and the last message id: ids must not be secrets.
	//
	// Only the publisher's own message is affected by these: stored as
	// plain events, no other message changes.
	harmless := []struct {
		name   string
		header map[string]string
	}{
		{"a schedule target alone", map[string]string{"Nats-Schedule-Target": n.Timer("r1"), "Nats-Schedule-TTL": "1s", "Nats-Schedule-Source": n.Start("r1"), "Nats-Schedule-Rollup": "sub"}},
		{"counter sources", map[string]string{"Nats-Counter-Sources": `{"x":{"y":"1"}}`}},
		{"a marker reason", map[string]string{"Nats-Marker-Reason": "MaxAge"}},
		{"a batch sequence alone", map[string]string{"Nats-Batch-Sequence": "1", "Nats-Batch-Commit": "1"}},
		{"a fresh message id", map[string]string{"Nats-Msg-Id": "start/r1"}},
		{"an API level (checked on API requests only)", map[string]string{"Nats-Required-Api-Level": "999"}},
	}
	for i, c := range harmless {
		m := nats.NewMsg(n.Event("r1", fmt.Sprintf("h%d", i)))
		for k, v := range c.header {
			m.Header.Set(k, v)
		}
		if _, err := b.js.PublishMsg(b.ctx, m); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// A fast batch is asked for by the reply subject, not a header.
	reply := "_INBOX.fastbatch.b1.10.fail.1.2.$FI"
	sub, err := b.nc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.nc.PublishMsg(&nats.Msg{Subject: n.Event("r1", "fast"), Reply: reply, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	resp, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ack struct {
		Error *struct{ Description string } `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil || ack.Error == nil {
		t.Errorf("fast batch: answered %s, want an error", resp.Data)
	}

	// The run's start is intact and the stream holds exactly the start,
	// the harmless events and the control below; nothing fired.
	if got, err := in.GetMsg(b.ctx, first.Sequence); err != nil || got.Subject != stored(n, n.Start("r1")) {
		t.Fatalf("the start is gone: %v", err)
	}
	// Had a schedule been stored, its first fire (the @every 1s one's at
	// the latest, a second after it was published) would be in the stream
	// before a timer the timer stream fires later still, which reaches the
	// stream through the source only after firing: wait for that one.
	scheduleTimer(b.ctx, t, b.js, n, "control", "after-the-refused", time.Now().Add(1100*time.Millisecond))
	nextTimer(b.ctx, t, b.js, n, "control", 30*time.Second)
	info, err := in.Info(b.ctx, jetstream.WithSubjectFilter(n.InputAll()))
	if err != nil {
		t.Fatal(err)
	}
	if subj := info.State.Subjects; info.State.Msgs != uint64(2+len(harmless)) || subj[stored(n, n.Timer("r1"))] != 0 || subj[stored(n, n.Timer("control"))] != 1 {
		t.Errorf("the stream holds %d messages (%v), want the start, %d events and the control timer", info.State.Msgs, subj, len(harmless))
	}
	// Deletes are refused whoever asks. Purges (retention's) are an API
	// request only the dispatcher role may send (security/), never a header.
	if err := in.DeleteMsg(b.ctx, first.Sequence); err == nil {
		t.Error("delete of an input was allowed")
	}
}
