package kvstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// On a 3-node cluster Provision makes every stream and bucket R3, also
// when two processes run it at once through different nodes; CAS works,
// a run survives the restart of its bucket's leader, and a timer armed
// before the restart of the input stream's leader (which runs the source
// from the timer stream) fires into the input stream afterwards.
func TestClusterR3(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Cluster(t, 3)
	b := bundle{ctx: testCtx(t, 4*time.Minute), names: subjects.Must("t")}
	var jss []jetstream.JetStream
	for _, s := range c.Servers[:2] {
		nc, err := nats.Connect(s.ClientURL(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		jss = append(jss, natstest.JetStream(t, nc))
	}
	b.js = natstest.JetStream(t, c.Connect())
	opts := provision.ProvisionOptions{Replicas: 3}

	var wg sync.WaitGroup
	errs := make([]error, len(jss))
	for i, js := range jss {
		wg.Go(func() { errs[i] = provision.Provision(b.ctx, js, b.names, opts) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{b.names.InputStream(), b.names.TimerStream(), b.names.TaskStream(), "KV_" + b.names.RunBucket(), "KV_" + b.names.WorkflowBucket()} {
		s, err := b.js.Stream(b.ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info := s.CachedInfo()
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Errorf("stream %s: replicas %d, cluster %+v", name, info.Config.Replicas, info.Cluster)
		}
	}

	rs := b.runs(t)
	casRace(t, b, rs, 8)

	// Read-after-write across nodes: a write through one node is what a
	// leader read through another returns.
	other, err := kvstore.OpenRunStore(b.ctx, jss[1], b.names)
	if err != nil {
		t.Fatal(err)
	}
	_, rev, err := rs.Get(b.ctx, "race", kvstore.FromLeader())
	if err != nil {
		t.Fatal(err)
	}
	// Back-to-back CAS on one key also exercises the retry of writes the
	// server refuses unchecked (10164) just after acknowledging the last.
	for i := range 100 {
		if rev, err = rs.Update(b.ctx, "race", []byte{byte(i)}, rev); err != nil {
			t.Fatal(err)
		}
		data, got, err := other.Get(b.ctx, "race", kvstore.FromLeader())
		if err != nil || got != rev || data[0] != byte(i) {
			t.Fatalf("leader read %d = %v rev %d, %v; want rev %d", i, data, got, err, rev)
		}
	}

	wfs := b.workflowBucket(t)
	wrev, err := wfs.KV().Create(b.ctx, "doc.orders", []byte("deployed"))
	if err != nil {
		t.Fatal(err)
	}

	// Restart the run bucket's leader; the run and the workflow bucket's value are there
	// afterwards and CAS continues from the same revision.
	leader := c.WaitStreamLeader("KV_" + b.names.RunBucket())
	for i, s := range c.Servers {
		if s == leader {
			c.Restart(i)
		}
	}
	c.WaitStreamLeader("KV_" + b.names.RunBucket())
	var data []byte
	natstest.WaitFor(t, 30*time.Second, "run readable after restart", func() error {
		var got uint64
		data, got, err = rs.Get(b.ctx, "race", kvstore.FromLeader())
		if err == nil && got != rev {
			return errors.New("old revision")
		}
		return err
	})
	if data[0] != 99 {
		t.Fatalf("run after restart = %v", data)
	}
	if _, err := rs.Update(b.ctx, "race", []byte("after"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Update(b.ctx, "race", []byte("stale"), rev); !errors.Is(err, kvstore.ErrStale) {
		t.Fatalf("stale update after restart = %v", err)
	}
	if v, err := wfs.Get(b.ctx, "doc.orders", true); err != nil || string(v.Data) != "deployed" || v.Revision != wrev {
		t.Fatalf("workflow bucket after restart = %+v, %v", v, err)
	}

	// A timer through the source, across the restart of the node leading
	// the input stream.
	due := time.Now().Add(2 * time.Second)
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "t1", due)
	leader = c.WaitStreamLeader(b.names.InputStream())
	for i, s := range c.Servers {
		if s == leader {
			c.Restart(i)
		}
	}
	c.WaitStreamLeader(b.names.InputStream())
	// The new leader re-creates the source's consumer; each failure while
	// the cluster elects adds 10 s more to the server's retry back-off
	// (server/stream.go calculateRetryBackoff, capped at 2 min), so a
	// loaded machine can see the fire a minute late.
	m := nextTimer(b.ctx, t, b.js, b.names, "r1", 150*time.Second)
	if md, err := m.Metadata(); err != nil || md.Timestamp.Before(due) {
		t.Errorf("timer fired at %v (%v), due %s", md, err, due)
	}
}
