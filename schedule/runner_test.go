package schedule

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// TestRunnerStartAndStopAreSafe: Stop before Start, Start twice, Stop
// twice, a runner off, and a runner on a deployment without a schedule
// stream (it waits for one) all stop cleanly; goleak checks nothing is
// left running.
func TestRunnerStartAndStopAreSafe(t *testing.T) {
	s := natstest.Server(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := subjects.Must("s")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, js, client.Config{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	r := New(js, c, Config{Names: names, Logger: quiet})
	r.Stop()
	r.Start()
	r.Start()
	r.Stop()
	r.Stop()
	r.Start()
	r.Stop()
	New(js, c, Config{Names: names, Logger: quiet, Off: true}).Start()
	bare := New(js, c, Config{Names: subjects.Must("none"), Logger: quiet})
	bare.Start()
	bare.Stop()
}
