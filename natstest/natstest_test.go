package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func TestServerRestartKeepsStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, s))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	natstest.Restart(t, s)
	st, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("%d messages after restart, want 1", n)
	}
}

// A cluster survives the restart of its meta leader, keeping an R3
// stream's data, and answers through a connection to any node.
func TestClusterRestartLeader(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := natstest.Cluster(t, 3)
	if len(c.Servers) != 3 || c.Leader() == nil {
		t.Fatalf("%d servers, leader %v", len(c.Servers), c.Leader())
	}
	js := natstest.JetStream(t, c.Connect())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	old := c.Leader()
	for i, s := range c.Servers {
		if s == old {
			c.Restart(i)
		}
	}
	if c.Leader() == nil {
		t.Fatal("no meta leader after WaitReady")
	}
	c.WaitStreamLeader("S")
	natstest.WaitFor(t, 30*time.Second, "stream readable", func() error {
		st, err := js.Stream(ctx, "S")
		if err == nil && st.CachedInfo().State.Msgs != 1 {
			t.Fatalf("%d messages after restart, want 1", st.CachedInfo().State.Msgs)
		}
		return err
	})
}
