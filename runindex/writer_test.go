package runindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// tombstone is run r's record once retention removed it, as settled by
// workflow wf: an easy record to index.
func tombstone(r, wf string) []byte {
	return fmt.Appendf(nil, `{"removed":{"run":%q,"at":1,"workflow":%q,"revision":"1","status":"done","settled":1,"until":2}}`, r, wf)
}

// removedRuns lists the removed runs as run@workflow, without waiting
// for the index to catch up.
func removedRuns(ctx context.Context, c *client.Client) ([]string, error) {
	page, err := c.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusRemoved}, Limit: 100, Wait: -1})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(page.Runs))
	for _, r := range page.Runs {
		out = append(out, r.Status.Run+"@"+r.Status.Workflow)
	}
	return out, nil
}

// TestWriterKeepsTheLatestRevision drives the writer with changes out of
// order, from two writers that know different heads, and with an entry a
// crash left behind: the listing shows the latest revision only.
func TestWriterKeepsTheLatestRevision(t *testing.T) {
	t.Parallel()
	ctx, js, names, newW := provisionedWriters(t, 30*time.Second)
	a, b := newW(), newW()
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	listed := func() string {
		t.Helper()
		runs, err := removedRuns(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(runs, " ")
	}
	kv, err := js.KeyValue(ctx, names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	revs := map[string]uint64{} // the record of each workflow's name, as stored
	for _, wf := range []string{"wf-3", "wf-5", "wf-6", "wf-7"} {
		if revs[wf], err = kv.Put(ctx, "r1", tombstone("r1", wf)); err != nil {
			t.Fatal(err)
		}
	}
	index := func(w *writer, wf string) {
		t.Helper()
		if err := w.index1(ctx, change{run: "r1", data: tombstone("r1", wf), rev: revs[wf], at: time.Unix(0, int64(revs[wf]))}); err != nil { //nolint:gosec // a small revision
			t.Fatal(err)
		}
	}
	// Revision 5, then a redelivered revision 3: 3 is skipped.
	index(a, "wf-5")
	index(a, "wf-3")
	if got := listed(); got != "r1@wf-5" {
		t.Errorf("after revisions 5 then 3: %q", got)
	}
	// Writer b has never seen r1: it guesses no head, is refused, reads
	// the head and writes revision 7.
	index(b, "wf-7")
	if got := listed(); got != "r1@wf-7" {
		t.Errorf("after revision 7 from another writer: %q", got)
	}
	// Writer a remembers the head of revision 5: its late revision 6 loses
	// to the head of 7, which may have had its entry replaced, so a
	// writes the run's current record (7) again.
	index(a, "wf-6")
	if got := listed(); got != "r1@wf-7" {
		t.Errorf("after a late revision 6: %q", got)
	}
	// An entry a crash left, older than the head, on a subject of its own.
	stale, _ := json.Marshal(wire.IndexEntry{Run: "r1", Workflow: "wf-2", Status: wire.StatusRemoved, RecordRev: 2})
	if _, err := js.Publish(ctx, names.IndexEntry("wf-2", wire.StatusRemoved, 2, "r1"), stale); err != nil {
		t.Fatal(err)
	}
	if got := listed(); got != "r1@wf-7" {
		t.Errorf("with an entry a crash left: %q", got)
	}
	// The run is deleted: nothing is listed.
	del, err := kv.PutString(ctx, "other", "x") // a later revision for the deletion's
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := b.index1(ctx, change{run: "r1", deleted: true, rev: del + 1}); err != nil {
		t.Fatal(err)
	}
	if got := listed(); got != "" {
		t.Errorf("after the deletion: %q", got)
	}
}

// TestWritersTakingTurnsStoreEachChangeOnce: when a run's changes reach
// writers in turn, as they do with several dispatchers, a writer whose
// guess of the head is wrong (it never saw the run, or remembers an
// older head) has its entries refused with the head, not stored. Each
// change then stores its entries and its head once.
func TestWritersTakingTurnsStoreEachChangeOnce(t *testing.T) {
	t.Parallel()
	ctx, js, names, newW := provisionedWriters(t, 30*time.Second)
	a, b := newW(), newW()
	index, err := js.Stream(ctx, names.IndexStream())
	if err != nil {
		t.Fatal(err)
	}
	stored := func() uint64 {
		t.Helper()
		info, err := index.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	before := stored()
	writers := []*writer{a, b, a, b, a}
	for i, w := range writers {
		rev := uint64(10 + i) //nolint:gosec // a small index
		c := change{run: "r1", data: tombstone("r1", fmt.Sprintf("wf-%d", rev)), rev: rev, at: time.Now()}
		if err := w.index1(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// A tombstone's entry is kept under two subjects, beside the head.
	if got, want := stored()-before, uint64(3*len(writers)); got != want {
		t.Errorf("index messages stored for %d changes: %d, want %d (entries and head once each)", len(writers), got, want)
	}
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusRemoved}, Wait: -1})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].Status.Workflow != "wf-14" {
		t.Fatalf("listed %+v (%v), want r1 at its latest record, wf-14", page.Runs, err)
	}
	// A redelivered earlier change is skipped by either writer.
	if err := b.index1(ctx, change{run: "r1", data: tombstone("r1", "wf-12"), rev: 12}); err != nil {
		t.Fatal(err)
	}
	if got, want := stored()-before, uint64(3*len(writers)); got != want {
		t.Errorf("a redelivered change stored %d messages", got-want)
	}
}

// TestRemovedEntriesExpireWithTheTombstone: a removed run's entries carry
// a TTL that ends with its tombstone, so that the deletion that follows
// has nothing to purge; a reader ignores them once the run is deleted,
// and the stream drops them on time. A tombstone about to expire has its
// entries purged by the deletion, as before.
func TestRemovedEntriesExpireWithTheTombstone(t *testing.T) {
	t.Parallel()
	ctx, js, names, newW := provisionedWriters(t, time.Minute)
	w := newW()
	index, err := js.Stream(ctx, names.IndexStream())
	if err != nil {
		t.Fatal(err)
	}
	entries := func(run string) map[string]string {
		t.Helper()
		info, err := index.Info(ctx, jetstream.WithSubjectFilter(names.IndexAll()))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for s := range info.State.Subjects {
			if !strings.HasSuffix(s, "."+run) || strings.Contains(s, ".idx.h.") {
				continue
			}
			m, err := index.GetLastMsgForSubject(ctx, s)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // expired since the listing
			}
			if err != nil {
				t.Fatal(err)
			}
			out[s] = m.Header.Get(jetstream.MsgTTLHeader)
		}
		return out
	}
	until := time.Now().Add(8 * time.Second)
	tomb := fmt.Appendf(nil, `{"removed":{"run":"r1","at":1,"workflow":"wf","revision":"1","status":"done","settled":1,"until":%d}}`, until.UnixMilli())
	soon := fmt.Appendf(nil, `{"removed":{"run":"r2","at":1,"workflow":"wf","revision":"1","status":"done","settled":1,"until":%d}}`, time.Now().Add(time.Second).UnixMilli())
	if err := w.index1(ctx, change{run: "r1", data: tomb, rev: 10, at: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := w.index1(ctx, change{run: "r2", data: soon, rev: 11, at: time.Now()}); err != nil {
		t.Fatal(err)
	}
	got := entries("r1")
	if len(got) != 2 {
		t.Fatalf("entries of the removed run: %v, want its two", got)
	}
	for s, ttl := range got {
		if d, err := time.ParseDuration(ttl); err != nil || d < 7*time.Second || d > 10*time.Second {
			t.Errorf("entry %s has TTL %q, want the tombstone's remaining 8 s (+1 s)", s, ttl)
		}
	}
	for s, ttl := range entries("r2") {
		if ttl != "" {
			t.Errorf("entry %s of a tombstone about to expire has TTL %q, want none (purged by the deletion)", s, ttl)
		}
	}
	// The tombstones expire: the deletions purge r2's entries and leave
	// r1's to their TTL.
	for i, run := range []string{"r1", "r2"} {
		if err := w.index1(ctx, change{run: run, deleted: true, rev: uint64(20 + i)}); err != nil { //nolint:gosec // a small index
			t.Fatal(err)
		}
	}
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusRemoved}, Wait: -1})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("after the deletions: %d runs listed (%v), want none", len(page.Runs), err)
	}
	natstest.WaitFor(t, 5*time.Second, "r2's entries purged by its deletion", func() error {
		if left := entries("r2"); len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
	// r1's deletion was indexed first: had it sent purges, the server
	// would have done them before r2's.
	if left := entries("r1"); len(left) != 2 {
		t.Errorf("r1's entries after its deletion: %v, want both left to their TTL (no purge)", left)
	}
	natstest.WaitFor(t, 20*time.Second, "r1's entries expired", func() error {
		if left := entries("r1"); len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
}

// provisionedWriters provisions a fresh server (its index marked in the
// current shape) and returns a maker of writers on it, without search
// attributes, each closed when the test ends; ctx ends after timeout.
func provisionedWriters(t *testing.T, timeout time.Duration) (context.Context, jetstream.JetStream, subjects.Names, func() *writer) {
	t.Helper()
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	none := func(string, string) (map[string]string, error) { return nil, nil }
	cfg := Config{Search: none, Logger: slog.New(slog.DiscardHandler)}.WithDefaults()
	return ctx, js, names, func() *writer {
		w, err := newWriter(ctx, js, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.close)
		return w
	}
}

// TestSearchReadFailureIsRetried: a change whose revision's search
// attributes cannot be read (the registry did not answer, as under a
// NATS fault) is not dropped as unindexable, which left the run's entry
// at an older revision for good; it fails to be delivered again, and is
// indexed once the attributes can be read.
func TestSearchReadFailureIsRetried(t *testing.T) {
	t.Parallel()
	ctx, js, names, _ := provisionedWriters(t, 30*time.Second)
	down := true
	search := func(string, string) (map[string]string, error) {
		if down {
			return nil, context.DeadlineExceeded
		}
		return map[string]string{"customer": "/input/customer"}, nil
	}
	w, err := newWriter(ctx, js, Config{Search: search, Logger: slog.New(slog.DiscardHandler)}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	c := change{run: "r1", data: []byte(record), rev: 9, at: time.Unix(0, 9)}
	err = w.index1(ctx, c)
	if err == nil || errors.As(err, new(*unindexable)) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("index with the registry down: %v, want an error to deliver the change again", err)
	}
	down = false
	if err := w.index1(ctx, c); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(ctx, js, client.Config{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	page, err := cl.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "c-7"}}, Limit: 10, Wait: -1})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].Status.Run != "r1" {
		t.Fatalf("listed %+v (%v), want run r1 by its customer", page, err)
	}
}
