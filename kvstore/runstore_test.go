package kvstore_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
)

func TestRunStoreCreateGetUpdate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)

	if _, _, err := rs.Get(b.ctx, "r1"); !errors.Is(err, kvstore.ErrRunNotFound) || !strings.Contains(err.Error(), rs.Bucket()) {
		t.Fatalf("Get of a missing run = %v", err)
	}
	if _, _, err := rs.Get(b.ctx, "r1", kvstore.FromLeader()); !errors.Is(err, kvstore.ErrRunNotFound) {
		t.Fatalf("leader Get of a missing run = %v", err)
	}
	rev1, err := rs.Create(b.ctx, "r1", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Create(b.ctx, "r1", []byte("again")); !errors.Is(err, kvstore.ErrRunExists) {
		t.Fatalf("second Create = %v, want ErrRunExists", err)
	}
	for _, opts := range [][]kvstore.ReadOption{nil, {kvstore.FromLeader()}} {
		data, rev, err := rs.Get(b.ctx, "r1", opts...)
		if err != nil || string(data) != "v1" || rev != rev1 {
			t.Fatalf("Get(%d opts) = %q %d %v, want v1 %d", len(opts), data, rev, err, rev1)
		}
	}
	rev2, err := rs.Update(b.ctx, "r1", []byte("v2"), rev1)
	if err != nil || rev2 <= rev1 {
		t.Fatalf("Update = %d, %v", rev2, err)
	}
	_, err = rs.Update(b.ctx, "r1", []byte("v3"), rev1)
	if !errors.Is(err, kvstore.ErrStale) || errors.Is(err, kvstore.ErrRunExists) {
		t.Fatalf("stale Update = %v, want ErrStale only", err)
	}
	if data, rev, _ := rs.Get(b.ctx, "r1", kvstore.FromLeader()); string(data) != "v2" || rev != rev2 {
		t.Fatalf("after a stale update: %q %d, want v2 %d", data, rev, rev2)
	}
	// GetEntry adds when the revision was stored, as List does.
	listed, err := rs.List(b.ctx, func(e kvstore.Entry) bool { return e.RunID == "r1" })
	if err != nil || len(listed) != 1 {
		t.Fatalf("List = %v, %v", listed, err)
	}
	if e, err := rs.GetEntry(b.ctx, "r1"); err != nil || string(e.Data) != "v2" || e.Revision != rev2 || e.RunID != "r1" || !e.Updated.Equal(listed[0].Updated) {
		t.Fatalf("GetEntry = %+v, %v; want v2 at %d stored %s", e, err, rev2, listed[0].Updated)
	}
	if _, err := rs.GetEntry(b.ctx, "nope"); !errors.Is(err, kvstore.ErrRunNotFound) {
		t.Fatalf("GetEntry of a missing run = %v", err)
	}
	// Update of a run that does not exist is stale too (revision 0 is
	// "absent", anything else is wrong).
	if _, err := rs.Update(b.ctx, "nope", []byte("x"), 7); !errors.Is(err, kvstore.ErrStale) {
		t.Fatalf("Update of a missing run = %v", err)
	}
}

func TestRunStoreRefusesBadRunIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)
	for _, id := range []string{"", "a.b", "a*", "a>", "a b"} {
		if _, err := rs.Create(b.ctx, id, nil); !errors.Is(err, subjects.ErrInvalid) {
			t.Errorf("Create(%q) = %v", id, err)
		}
		if _, _, err := rs.Get(b.ctx, id); !errors.Is(err, subjects.ErrInvalid) {
			t.Errorf("Get(%q) = %v", id, err)
		}
		if _, err := rs.Update(b.ctx, id, nil, 1); !errors.Is(err, subjects.ErrInvalid) {
			t.Errorf("Update(%q) = %v", id, err)
		}
	}
}

// Several writers update from the same revision at once: exactly one
// wins, every other gets ErrStale.
func TestRunStoreCASRace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)
	casRace(t, b, rs, 8)
}

func casRace(t *testing.T, b bundle, rs *kvstore.RunStore, writers int) {
	t.Helper()
	rev, err := rs.Create(b.ctx, "race", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			_, errs[i] = rs.Update(b.ctx, "race", []byte{byte('a' + i)}, rev)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, kvstore.ErrStale):
			t.Fatalf("writer %d: %v, want ErrStale", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	data, _, err := rs.Get(b.ctx, "race", kvstore.FromLeader())
	if err != nil || string(data) != string([]byte{byte('a' + winner)}) {
		t.Fatalf("stored %q, %v; writer %d won", data, err, winner)
	}
}

func TestRunStoreListAndWatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)

	if got, err := rs.List(b.ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("List of an empty bucket = %v, %v", got, err)
	}
	for _, id := range []string{"c", "a", "b"} {
		if _, err := rs.Create(b.ctx, id, []byte("state-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := rs.List(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].RunID != "a" || all[2].RunID != "c" || string(all[1].Data) != "state-b" || all[1].Revision == 0 || all[1].Updated.IsZero() {
		t.Fatalf("List = %+v", all)
	}
	some, err := rs.List(b.ctx, func(e kvstore.Entry) bool { return e.RunID != "b" })
	if err != nil || len(some) != 2 || some[1].RunID != "c" {
		t.Fatalf("filtered List = %+v, %v", some, err)
	}

	w, err := rs.WatchRun(b.ctx, "b", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	_, rev, _ := rs.Get(b.ctx, "b")
	if _, err := rs.Update(b.ctx, "a", []byte("other"), all[0].Revision); err != nil {
		t.Fatal(err)
	}
	newRev, err := rs.Update(b.ctx, "b", []byte("done"), rev)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.Updates():
		if e == nil || e.Key() != "b" || string(e.Value()) != "done" || e.Revision() != newRev {
			t.Fatalf("watched %v", e)
		}
	case <-time.After(time.Minute):
		t.Fatal("no update seen by the watcher")
	}
}
