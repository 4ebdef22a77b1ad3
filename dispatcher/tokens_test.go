package dispatcher

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// TestForgedResultsAreRecordedAndRefused answers a run's invocation with
// results that name the right activation, node and attempt (which the
// reducer would accept) but not the token its invocation carried. Each is
// recorded as a rejection and the run goes on, until the genuine result.
func TestForgedResultsAreRecordedAndRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{RejectedHistory: 8})
	ctx := testCtx(t)
	c, err := provision.EnsureTaskConsumer(ctx, b.js, b.names, "t", "1", provision.TaskPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"victim", "other"} {
		b.start(t, id, map[string]any{"task": "t", "version": "1", "payload": id})
	}
	invs := map[string]wire.Invocation{}
	for len(invs) < 2 {
		batch, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			var inv wire.Invocation
			if err := json.Unmarshal(m.Data(), &inv); err != nil {
				t.Fatal(err)
			}
			invs[inv.Run] = inv
			_ = m.Ack()
		}
		if batch.Error() != nil {
			t.Fatal(batch.Error())
		}
	}
	v, o := invs["victim"], invs["other"]
	if !d.cfg.Tokens.Verify("victim", v.Activation, v.Node, v.Attempt, v.Token) {
		t.Fatalf("the invocation's token %q does not verify", v.Token)
	}
	forged := map[string]string{
		"no token":            "",
		"the old message id":  "victim/" + v.Activation,
		"another run's token": o.Token,
		"another secret's":    mustSigner(9).Sign("victim", v.Activation, v.Node, v.Attempt),
		"a guess":             "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"another attempt's":   d.cfg.Tokens.Sign("victim", v.Activation, v.Node, v.Attempt+1),
	}
	for _, tok := range forged {
		b.publish(t, v.Reply, wire.Result{Activation: v.Activation, Node: v.Node, Attempt: v.Attempt, Token: tok, Output: json.RawMessage(`"forged"`)}, "")
	}
	// Another run's genuine result, replayed on the victim's subject.
	b.publish(t, v.Reply, wire.Result{Activation: o.Activation, Node: o.Node, Attempt: o.Attempt, Token: o.Token, Output: json.RawMessage(`"forged"`)}, "")
	b.consumerSettled(t, 10*time.Second)
	rec := b.record(t, "victim")
	if rec.Status != nil && rec.Status.Status == wire.StatusDone {
		t.Fatalf("a forged result finished the run: %s", rec.Status.Result)
	}
	if len(rec.Rejected) != len(forged)+1 {
		t.Fatalf("%d rejections recorded, want %d: %+v", len(rec.Rejected), len(forged)+1, rec.Rejected)
	}
	for _, r := range rec.Rejected {
		if r.Kind != subjects.KindResult || !strings.Contains(r.Reason, step.ReasonForgedToken) {
			t.Errorf("rejection %+v", r)
		}
	}
	b.publish(t, v.Reply, wire.Result{Activation: v.Activation, Node: v.Node, Attempt: v.Attempt, Token: v.Token, Output: json.RawMessage(`"genuine"`)}, "")
	rec = b.waitStatus(t, "victim", wire.StatusDone, 10*time.Second)
	if got := string(rec.Status.Result); got != `"genuine"` {
		t.Fatalf("result %s, want the genuine one", got)
	}
}

// testSigner signs the invocations of tests that render without a
// dispatcher.
var testSigner = mustSigner(1)

func mustSigner(b byte) *token.Signer {
	s, err := token.New(bytes.Repeat([]byte{b}, token.SecretSize))
	if err != nil {
		panic(err)
	}
	return s
}
