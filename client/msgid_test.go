package client_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Every input the client publishes carries a Nats-Msg-Id that nobody else
// can guess (a fresh nonce per call), unless the caller gives an event its
// own key; a message squatting the id a start had before (start/<run>) is
// stored as what it is and drops nothing.
func TestMessageIDs(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 20*time.Second)
	srv := natstest.Server(t)
	nc := natstest.Conn(t, srv)
	js := natstest.JetStream(t, nc)
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync(names.InputAll())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, names.Event("r1", "squat"), nil, jetstream.WithMsgID("start/r1")); err != nil {
		t.Fatal(err)
	}
	calls := []func() error{
		func() error { return c.StartRun(ctx, "wf", "r1", nil) },
		func() error { return c.StartRun(ctx, "wf", "r1", nil) },
		func() error { return c.SendEvent(ctx, "r1", "go", nil) },
		func() error { return c.SendEvent(ctx, "r1", "go", nil) },
		func() error { return c.SendEvent(ctx, "r1", "go", nil, client.EventID("k-7d1f")) },
		func() error { return c.Cancel(ctx, "r1", "") },
	}
	for _, call := range calls {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^start/r1$`), // the squatter's
		regexp.MustCompile(`^start/r1/[A-Z2-7]{26}$`),
		regexp.MustCompile(`^start/r1/[A-Z2-7]{26}$`),
		regexp.MustCompile(`^event/r1/[A-Z2-7]{26}$`),
		regexp.MustCompile(`^event/r1/[A-Z2-7]{26}$`),
		regexp.MustCompile(`^event/r1/k-7d1f$`),
		regexp.MustCompile(`^cancel/r1/[A-Z2-7]{26}$`),
	}
	seen := map[string]bool{}
	for i, re := range want {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		id := m.Header.Get(wire.HeaderMsgID)
		if !re.MatchString(id) || seen[id] {
			t.Errorf("message %d on %s has Nats-Msg-Id %q, want a new one matching %s", i, m.Subject, id, re)
		}
		seen[id] = true
	}
	// Every one was stored: none was taken for a duplicate.
	in, err := js.Stream(ctx, names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := in.Info(ctx); err != nil || info.State.Msgs != uint64(len(want)) {
		t.Errorf("the input stream holds %v messages (%v), want %d", info.State.Msgs, err, len(want))
	}
}
