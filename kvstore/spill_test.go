package kvstore_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/payload"
)

// TestRunStoreKeepsLargeValuesByReference: a record with a value above the
// threshold is stored small, with the value by reference; Get gives back
// the record byte for byte; saving it again with the value unchanged
// uploads nothing; a store that did not write it (another process) reads
// it from the bucket; and a spoiled object makes the record unreadable,
// naming the object, rather than changing it.
func TestRunStoreKeepsLargeValuesByReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ps, err := payload.Open(b.ctx, b.js, payload.Config{Names: b.names, Threshold: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rs := b.runs(t).WithPayloads(ps)
	big := strings.Repeat("v", 64<<10)
	rec := func(n int) []byte {
		return []byte(`{"state":{"input":{"blob":"` + big + `"},"n":` + strings.Repeat("1", n) + `},"outbox":[{"id":"x","kind":"invoke","subject":"s","data":{"input":{"blob":"` + big + `"}}}]}`)
	}
	rev, err := rs.Create(b.ctx, "r1", rec(1))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := b.js.KeyValue(b.ctx, b.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := kv.Get(b.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !payload.HasRefs(raw.Value()) || len(raw.Value()) > 1<<10 {
		t.Fatalf("the run bucket holds %d bytes: %.300s", len(raw.Value()), raw.Value())
	}
	obs, err := b.js.ObjectStore(b.ctx, b.names.PayloadBucket())
	if err != nil {
		t.Fatal(err)
	}
	objects := func() []*jetstream.ObjectInfo {
		infos, err := obs.List(b.ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
			t.Fatal(err)
		}
		return infos
	}
	if got := objects(); len(got) != 1 || !strings.HasPrefix(got[0].Name, "r1/value/") {
		t.Fatalf("objects after the first save: %d, want the one value of r1", len(got))
	}
	first := objects()[0].ModTime
	if _, err := rs.Update(b.ctx, "r1", rec(2), rev); err != nil {
		t.Fatal(err)
	}
	if got := objects(); len(got) != 1 || !got[0].ModTime.Equal(first) {
		t.Fatalf("a save with the value unchanged wrote objects: %d", len(got))
	}
	if data, _, err := rs.Get(b.ctx, "r1"); err != nil || !bytes.Equal(data, rec(2)) {
		t.Fatalf("Get = %d bytes, %v; want the record as saved", len(data), err)
	}
	other := b.runs(t).WithPayloads(ps)
	if data, _, err := other.Get(b.ctx, "r1"); err != nil || !bytes.Equal(data, rec(2)) {
		t.Fatalf("another store's Get = %d bytes, %v; want the record as saved", len(data), err)
	}
	name := objects()[0].Name
	if _, err := obs.PutBytes(b.ctx, name, []byte(`"spoiled"`)); err != nil {
		t.Fatal(err)
	}
	fresh := b.runs(t).WithPayloads(ps)
	if _, _, err := fresh.Get(b.ctx, "r1"); !errors.Is(err, payload.ErrDigest) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Get of a record whose value was spoiled = %v, want a digest mismatch naming %s", err, name)
	}
}
