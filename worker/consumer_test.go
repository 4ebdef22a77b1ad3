package worker_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/worker"
)

func TestEnsureTaskConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.ensure(t, worker.TaskPolicy{})
	cfg := c.CachedInfo().Config
	if cfg.Durable != b.names.TaskConsumer(task, version) || cfg.FilterSubject != b.names.Task(task, version) ||
		cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.AckWait != worker.DefaultStartToClose ||
		cfg.MaxAckPending != worker.DefaultMaxAckPending || cfg.MaxDeliver != worker.DefaultMaxDeliver {
		t.Errorf("default consumer config = %+v", cfg)
	}
	// A redeployment with another policy updates the consumer in place.
	c = b.ensure(t, worker.TaskPolicy{StartToClose: 2 * time.Minute, MaxAckPending: 8, MaxDeliver: -1})
	cfg = c.CachedInfo().Config
	if cfg.AckWait != 2*time.Minute || cfg.MaxAckPending != 8 || cfg.MaxDeliver != -1 {
		t.Errorf("updated consumer config = %+v", cfg)
	}
	for _, tv := range [][2]string{{"a.b", "1"}, {"a", "1 2"}, {"", "1"}} {
		if _, err := worker.EnsureTaskConsumer(testCtx(t), b.js, b.names, tv[0], tv[1], worker.TaskPolicy{}); err == nil {
			t.Errorf("EnsureTaskConsumer(%q, %q) accepted", tv[0], tv[1])
		}
	}
	for _, p := range []worker.TaskPolicy{{StartToClose: -1}, {MaxAckPending: -1}, {MaxDeliver: -2}, {Replicas: -1}} {
		if _, err := worker.EnsureTaskConsumer(testCtx(t), b.js, b.names, task, version, p); err == nil {
			t.Errorf("EnsureTaskConsumer accepted policy %+v", p)
		}
	}
}
