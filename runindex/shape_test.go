package runindex_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// TestIndexOfAnOlderShapeIsRebuilt: an index written before the bucketed
// subjects (no shape mark, entries on idx.r and idx.a) is read around
// (a listing scans the records) until an indexer starts, which rebuilds
// it: the old subjects are gone and listings read the index again.
func TestIndexOfAnOlderShapeIsRebuilt(t *testing.T) {
	t.Parallel()
	b := setup(t, true) // runs made while no dispatcher keeps the index
	b.start(t, 4, 1)
	// What a dispatcher of the older shape left: entries and a head per
	// run, no shape mark and no off mark.
	s, err := b.js.Stream(b.ctx, b.names.IndexStream())
	if err != nil {
		t.Fatal(err)
	}
	for _, mark := range []string{b.names.IndexOff(), b.names.IndexShapeMark()} {
		if err := s.Purge(b.ctx, jetstream.WithPurgeSubject(mark)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		run := fmt.Sprintf("idx-%d", i)
		e, _ := json.Marshal(wire.IndexEntry{Run: run, Workflow: "gate", Revision: "g1", Status: wire.StatusWaiting, RecordRev: 1, Search: map[string]string{"customer": "c-9"}})
		h, _ := json.Marshal(wire.IndexHead{RecordRev: 1, Workflow: "gate", Status: wire.StatusWaiting, Search: map[string]string{"customer": "c-9"}})
		for subj, body := range map[string][]byte{
			b.names.IndexEntryV1("gate", wire.StatusWaiting, run):                   e,
			b.names.IndexAttrV1("customer", "c-9", "gate", wire.StatusWaiting, run): e,
			b.names.IndexHead(run): h,
		} {
			if _, err := b.js.Publish(b.ctx, subj, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if shape, err := client.ReadIndexShape(b.ctx, b.js, b.names); err != nil || shape != 1 {
		t.Fatalf("shape of an index without the mark: %d, %v; want 1", shape, err)
	}
	page, err := b.c.ListRuns(b.ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusWaiting}, Sort: client.SortUpdate})
	if err != nil || !page.Scanned || len(page.Runs) != 3 {
		t.Fatalf("listing over an index of the older shape: %+v, %v; want the 3 waiting runs, scanned", page, err)
	}
	x := runindex.New(b.js, runindex.Config{Logger: slog.New(slog.DiscardHandler)})
	x.Start()
	defer x.Stop()
	natstest.WaitFor(t, time.Minute, "the index rebuilt in the new shape", func() error {
		if shape, err := client.ReadIndexShape(b.ctx, b.js, b.names); err != nil || shape != subjects.IndexShape {
			return fmt.Errorf("shape %d: %w", shape, err)
		}
		page, err := b.c.ListRuns(b.ctx, client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "c-0"}}, Sort: client.SortStart, Wait: -1})
		if err != nil {
			return err
		}
		var got []string
		for _, r := range page.Runs {
			got = append(got, r.Status.Run+":"+r.Status.Status)
		}
		if page.Scanned || strings.Join(got, " ") != "idx-2:waiting idx-0:done" {
			return fmt.Errorf("listed %q (scanned %v)", got, page.Scanned)
		}
		return nil
	})
	var old []string
	if _, err := kvstoreDirect(b, func(s string) {
		if strings.Contains(s, ".idx.r.") || strings.Contains(s, ".idx.a.") {
			old = append(old, s)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(old) > 0 {
		t.Errorf("the rebuilt index keeps subjects of the older shape: %q", old)
	}
}
