package kvstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// LastStart finds a run's start on its stored subject in a partitioned
// stream, on the published one in an unpartitioned stream, and says
// ErrMsgNotFound for a run that has none.
func TestLastStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	for _, c := range []struct {
		prefix     string
		partitions int
	}{{"parted", 0}, {"flat", -1}} {
		n := subjects.Must(c.prefix)
		if err := provision.Provision(ctx, js, n, provision.ProvisionOptions{Partitions: c.partitions}); err != nil {
			t.Fatal(err)
		}
		ack, err := js.Publish(ctx, n.Start("r1"), []byte(`{"workflow":"w"}`))
		if err != nil {
			t.Fatal(err)
		}
		in, err := js.Stream(ctx, n.InputStream())
		if err != nil {
			t.Fatal(err)
		}
		m, err := kvstore.LastStart(ctx, in, n, "r1")
		if err != nil || m.Sequence != ack.Sequence {
			t.Errorf("%s: LastStart(r1) = %+v, %v; want sequence %d", c.prefix, m, err, ack.Sequence)
		}
		if _, err := kvstore.LastStart(ctx, in, n, "r2"); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("%s: LastStart(r2) = %v, want ErrMsgNotFound", c.prefix, err)
		}
	}
}
