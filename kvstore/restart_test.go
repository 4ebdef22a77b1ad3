package kvstore_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
)

// A server restarted on its data directory keeps the streams, the run and
// workflow buckets, and a timer scheduled before the restart, which then
// fires.
func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)
	rev, err := rs.Create(b.ctx, "r1", []byte("waiting"))
	if err != nil {
		t.Fatal(err)
	}
	wrev, err := b.workflowBucket(t).KV().Create(b.ctx, "doc.orders", []byte("deployed"))
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(2 * time.Second)
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "t1", due)
	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := in.Info(b.ctx, jetstream.WithSubjectFilter(b.names.StoredInput(b.names.Timer("r1"), provision.Partitions(in.CachedInfo().Config))))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 {
		t.Fatalf("the timer fired before the restart (due %s, now %s)", due, time.Now())
	}

	natstest.Restart(t, b.srv)

	// The connection is in process and reconnects by itself; provisioning
	// again on restart is what a jetflow process does, and must keep data.
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	rs = b.runs(t)
	if data, got, err := rs.Get(b.ctx, "r1"); err != nil || string(data) != "waiting" || got != rev {
		t.Fatalf("run after restart = %q rev %d, %v; want rev %d", data, got, err, rev)
	}
	if v, err := b.workflowBucket(t).Get(b.ctx, "doc.orders", false); err != nil || string(v.Data) != "deployed" || v.Revision != wrev {
		t.Fatalf("workflow bucket after restart = %+v, %v", v, err)
	}
	m := nextTimer(b.ctx, t, b.js, b.names, "r1", 15*time.Second)
	md, _ := m.Metadata()
	if md.Timestamp.Before(due) {
		t.Errorf("timer fired at %s, before due %s", md.Timestamp, due)
	}
}
