package provision_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// stored is the subject an input published on subject is stored on in
// an input stream of the default partitions.
func stored(n subjects.Names, subject string) string {
	return n.StoredInput(subject, provision.DefaultPartitions)
}

// bundle is what most tests need: a provisioned server and a connection.
type bundle struct {
	ctx   context.Context
	srv   *embedded.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	names subjects.Names
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// setup starts a server with a file store and provisions it.
func setup(t *testing.T) bundle {
	t.Helper()
	b := bundle{ctx: testCtx(t, 60*time.Second), srv: natstest.Server(t), names: subjects.Must("t")}
	b.nc = natstest.Conn(t, b.srv)
	b.js = natstest.JetStream(t, b.nc)
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b bundle) runs(t *testing.T) *kvstore.RunStore {
	t.Helper()
	rs, err := kvstore.OpenRunStore(b.ctx, b.js, b.names)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
