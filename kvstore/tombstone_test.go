package kvstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// TestTombstone: a tombstone replaces a record by compare-and-swap, lives
// its TTL, and then the key is free for a new run.
func TestTombstone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)
	if ok, err := rs.TakesKeyTTLs(b.ctx); err != nil || !ok {
		t.Fatalf("TakesKeyTTLs = %v, %v on a provisioned bucket", ok, err)
	}
	rev, err := rs.Create(b.ctx, "r", []byte(`{"state":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Tombstone(b.ctx, "r", []byte("gone"), rev+100, time.Second); !errors.Is(err, kvstore.ErrStale) {
		t.Errorf("tombstone at a stale revision: %v, want ErrStale", err)
	}
	if _, err := rs.Tombstone(b.ctx, "r", []byte("gone"), rev, time.Second); err != nil {
		t.Fatal(err)
	}
	if data, _, err := rs.Get(b.ctx, "r"); err != nil || string(data) != "gone" {
		t.Fatalf("after the tombstone: %q, %v", data, err)
	}
	if _, err := rs.Create(b.ctx, "r", []byte(`{"state":2}`)); !errors.Is(err, kvstore.ErrRunExists) {
		t.Errorf("a create over a living tombstone: %v, want ErrRunExists", err)
	}
	natstest.WaitFor(t, 10*time.Second, "the tombstone expired", func() error {
		_, _, err := rs.Get(b.ctx, "r")
		if !errors.Is(err, kvstore.ErrRunNotFound) {
			return errors.New("still there")
		}
		return nil
	})
	// The server leaves a marker with no data where it expired, which a
	// read through the leader (after a conflict, and by retention) must
	// take for no record, not for one that does not decode.
	if data, _, err := rs.Get(b.ctx, "r", kvstore.FromLeader()); !errors.Is(err, kvstore.ErrRunNotFound) {
		t.Errorf("a leader read of the expired tombstone: %q, %v; want ErrRunNotFound", data, err)
	}
	if _, err := rs.Create(b.ctx, "r", []byte(`{"state":3}`)); err != nil {
		t.Errorf("a create after the tombstone expired: %v", err)
	}
}

// TestTombstoneLeavesNoOlderRevision: in a bucket that keeps several
// revisions of a run, the tombstone is the only one left (an older record
// would otherwise be the run again, were the tombstone to go).
func TestTombstoneLeavesNoOlderRevision(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	n := subjects.Must("deep")
	if err := provision.Provision(ctx, js, n, provision.ProvisionOptions{RunHistory: 5}); err != nil {
		t.Fatal(err)
	}
	rs, err := kvstore.OpenRunStore(ctx, js, n)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := rs.Create(ctx, "r", []byte(`{"state":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if rev, err = rs.Update(ctx, "r", []byte(`{"state":2}`), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Tombstone(ctx, "r", []byte("gone"), rev, time.Hour); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, n.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	hist, err := kv.History(ctx, "r")
	if err != nil || len(hist) != 1 || string(hist[0].Value()) != "gone" {
		t.Fatalf("history of the removed run: %d revisions (%v)", len(hist), err)
	}
}

// TestTombstoneNeedsKeyTTLs: a run bucket provisioned before retention
// refuses a tombstone with ErrNoKeyTTL, and says so beforehand.
func TestTombstoneNeedsKeyTTLs(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	n := subjects.Must("old")
	cfg := provision.RunBucketConfig(n, provision.ProvisionOptions{})
	cfg.LimitMarkerTTL = 0
	if _, err := js.CreateKeyValue(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rs, err := kvstore.OpenRunStore(ctx, js, n)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := rs.TakesKeyTTLs(ctx); err != nil || ok {
		t.Errorf("TakesKeyTTLs = %v, %v on an old bucket", ok, err)
	}
	rev, err := rs.Create(ctx, "r", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Tombstone(ctx, "r", []byte("gone"), rev, time.Minute); !errors.Is(err, kvstore.ErrNoKeyTTL) {
		t.Errorf("tombstone in an old bucket: %v, want ErrNoKeyTTL", err)
	}
}
