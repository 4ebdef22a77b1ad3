package provision_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/worker"
)

const task, version = "ship", "1"

func TestEnsureTaskConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ensure := func(p provision.TaskPolicy) jetstream.ConsumerConfig {
		t.Helper()
		c, err := provision.EnsureTaskConsumer(b.ctx, b.js, b.names, task, version, p)
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Config
	}
	cfg := ensure(provision.TaskPolicy{})
	if cfg.Durable != b.names.TaskConsumer(task, version) || cfg.FilterSubject != b.names.Task(task, version) ||
		cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.AckWait != provision.DefaultStartToClose ||
		cfg.MaxAckPending != provision.DefaultMaxAckPending || cfg.MaxDeliver != provision.DefaultMaxDeliver {
		t.Errorf("default consumer config = %+v", cfg)
	}
	// A redeployment with another policy updates the consumer in place.
	cfg = ensure(provision.TaskPolicy{StartToClose: 2 * time.Minute, MaxAckPending: 8, MaxDeliver: -1})
	if cfg.AckWait != 2*time.Minute || cfg.MaxAckPending != 8 || cfg.MaxDeliver != -1 {
		t.Errorf("updated consumer config = %+v", cfg)
	}
	for _, tv := range [][2]string{{"a.b", "1"}, {"a", "1 2"}, {"", "1"}} {
		if _, err := provision.EnsureTaskConsumer(b.ctx, b.js, b.names, tv[0], tv[1], provision.TaskPolicy{}); err == nil {
			t.Errorf("EnsureTaskConsumer(%q, %q) accepted", tv[0], tv[1])
		}
	}
	for _, p := range []provision.TaskPolicy{{StartToClose: -1}, {MaxAckPending: -1}, {MaxDeliver: -2}, {Replicas: -1}} {
		if _, err := provision.EnsureTaskConsumer(b.ctx, b.js, b.names, task, version, p); err == nil {
			t.Errorf("EnsureTaskConsumer accepted policy %+v", p)
		}
	}
}

// A worker told to create its task consumer (development) creates the one
// a deployment would: the SDK keeps its own copy of the configuration,
// since it depends on nothing of jetflow but subjects, wire and the leaf
// packages clock and lifecycle.
func TestWorkerCreatesTheDeployedTaskConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i, p := range []worker.TaskPolicy{{}, {StartToClose: 7 * time.Second, MaxAckPending: 9, MaxDeliver: -1, Replicas: 1}} {
		tv := version + string(rune('a'+i))
		w, err := worker.New(b.js, worker.Config{Names: b.names, CreateConsumers: true, ConsumerPolicy: p, PollWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Register(task, tv, func(context.Context, worker.Invocation) (any, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(b.ctx); err != nil {
			t.Fatal(err)
		}
		var got jetstream.ConsumerConfig
		natstest.WaitFor(t, 10*time.Second, "the worker's consumer", func() error {
			c, err := b.js.Consumer(b.ctx, b.names.TaskStream(), b.names.TaskConsumer(task, tv))
			if err == nil {
				got = c.CachedInfo().Config
			}
			return err
		})
		if err := w.Stop(b.ctx); err != nil {
			t.Fatal(err)
		}
		pp := provision.TaskPolicy(p).WithDefaults()
		want := provision.TaskConsumerConfig(b.names, task, tv, pp)
		// What the server fills in for a config that leaves it unset.
		want.ReplayPolicy, want.MaxWaiting, want.MaxRequestMaxBytes, want.Metadata = got.ReplayPolicy, got.MaxWaiting, got.MaxRequestMaxBytes, got.Metadata
		if want.Replicas == 0 {
			want.Replicas = got.Replicas
		}
		if !sameConsumer(got, want) {
			t.Errorf("policy %+v: the worker created\n%+v\nwant\n%+v", p, got, want)
		}
	}
}

// The dispatchers' consumer: every input, explicit acks, never given up on.
func TestDispatcherConsumerConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := provision.DispatcherConsumerConfig(b.names, 30*time.Second, 1<<16)
	want := jetstream.ConsumerConfig{
		Durable:       "dispatcher",
		Description:   "jetflow dispatchers: every run input",
		FilterSubject: "t.in.>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    -1,
		MaxAckPending: 1 << 16,
	}
	if !sameConsumer(cfg, want) {
		t.Errorf("config = %+v, want %+v", cfg, want)
	}
	c, err := b.js.CreateOrUpdateConsumer(b.ctx, b.names.InputStream(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config; got.AckWait != cfg.AckWait || got.MaxDeliver != -1 || got.MaxAckPending != cfg.MaxAckPending || got.FilterSubject != cfg.FilterSubject {
		t.Errorf("created %+v", got)
	}
}

func sameConsumer(a, b jetstream.ConsumerConfig) bool {
	return a.Durable == b.Durable && a.Description == b.Description && a.FilterSubject == b.FilterSubject &&
		a.DeliverPolicy == b.DeliverPolicy && a.AckPolicy == b.AckPolicy && a.AckWait == b.AckWait &&
		a.MaxAckPending == b.MaxAckPending && a.MaxDeliver == b.MaxDeliver && a.Replicas == b.Replicas &&
		a.ReplayPolicy == b.ReplayPolicy && a.MaxWaiting == b.MaxWaiting && len(a.FilterSubjects) == len(b.FilterSubjects) &&
		len(a.BackOff) == len(b.BackOff) && a.InactiveThreshold == b.InactiveThreshold && a.MemoryStorage == b.MemoryStorage
}
