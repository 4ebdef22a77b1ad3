package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// bundle is what most tests need: a provisioned server and a connection.
type bundle struct {
	ctx   context.Context
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
	b := bundle{ctx: testCtx(t, 60*time.Second), names: subjects.Must("t")}
	b.js = natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	return b
}
