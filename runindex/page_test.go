package runindex_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// TestPagesCoverEveryBucket pages through filters of every density over
// an index of many buckets (the fixture of TestListAtScale: run i was
// written i-th and started i-th), by update and by start, with pages of
// several sizes: the pages hold every run of the filter once, newest
// first, and none other.
func TestPagesCoverEveryBucket(t *testing.T) {
	t.Parallel()
	const n = 3000 // 47 buckets of each order
	srv := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	storeAtScale(ctx, t, js, names, n)
	fillInputs(ctx, t, js, names, n)
	writeIndexAtScale(ctx, t, js, names, n)
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	type shape struct{ wf, status, customer string }
	of := func(i int) shape {
		return shape{fmt.Sprintf("wf-%d", i%5), scaleStatuses[(i/5)%len(scaleStatuses)], fmt.Sprintf("c-%d", i%scaleCustomers)}
	}
	filters := []struct {
		name string
		f    wire.RunFilter
		keep func(shape) bool
	}{
		{"every run", wire.RunFilter{}, func(shape) bool { return true }},
		{"20%", wire.RunFilter{Status: wire.StatusWaiting}, func(s shape) bool { return s.status == wire.StatusWaiting }},
		{"4%", wire.RunFilter{Workflow: "wf-2", Status: wire.StatusFailed}, func(s shape) bool { return s.wf == "wf-2" && s.status == wire.StatusFailed }},
		{"one run", wire.RunFilter{Where: map[string]string{"customer": "c-4242"}}, func(s shape) bool { return s.customer == "c-4242" }},
		{"a workflow of a customer", wire.RunFilter{Workflow: "wf-2", Where: map[string]string{"customer": "c-17"}}, func(s shape) bool { return s.wf == "wf-2" && s.customer == "c-17" }},
		{"none", wire.RunFilter{Status: wire.StatusRemoved}, func(shape) bool { return false }},
	}
	for _, f := range filters {
		var want []string
		for i := n - 1; i >= 0; i-- {
			if f.keep(of(i)) {
				want = append(want, fmt.Sprintf("s-%07d", i))
			}
		}
		for _, sort := range []string{client.SortUpdate, client.SortStart} {
			for _, limit := range []int{0, 9, 100} {
				if limit == 9 && len(want) > 300 {
					continue // many pages: the larger limit covers these
				}
				var got []string
				cursor, pages := "", 0
				for {
					page, err := c.ListRuns(ctx, client.ListOptions{Filter: f.f, Sort: sort, Limit: limit, Cursor: cursor, Wait: -1})
					if err != nil {
						t.Fatalf("%s by %s, limit %d: %v", f.name, sort, limit, err)
					}
					if page.Scanned {
						t.Fatalf("%s by %s: scanned the records, want the index", f.name, sort)
					}
					if limit > 0 && len(page.Runs) > limit {
						t.Fatalf("%s by %s: a page of %d runs, limit %d", f.name, sort, len(page.Runs), limit)
					}
					for _, r := range page.Runs {
						got = append(got, r.Status.Run)
					}
					pages++
					if cursor = page.Next; cursor == "" || pages > n {
						break
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s by %s, limit %d: %d runs in %d pages, want %d; first differences: %s", f.name, sort, limit, len(got), pages, len(want), firstDiff(got, want))
				}
			}
		}
	}
}

// firstDiff says where two lists of runs part.
func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			return fmt.Sprintf("at %d got %q want %q", i, got[i:min(len(got), i+3)], want[i:min(len(want), i+3)])
		}
	}
	return "none"
}

// TestSparsePageReadsItsOwnEntries lists a search attribute value that
// few runs have, none of them lately, so that the first page finds none
// in the newest buckets and turns to what is left: it reads about the
// entries it lists, not every entry of the value. A cold page loads one
// block per entry it reads, and a rare value's entries lie one in a
// block, so reading them all cost a load of every block of the index.
func TestSparsePageReadsItsOwnEntries(t *testing.T) {
	t.Parallel()
	const n, limit = 2000, 10
	// Runs 7, 17, … up to 1,737 are the rare customer's: 174 runs, the
	// last 262 revisions none.
	rare := func(i int) bool { return i%10 == 7 && i < n-256 }
	rec := func(i int) []byte {
		if rare(i) {
			return runRecord(i, "rare")
		}
		return runRecord(i, fmt.Sprintf("c-%d", i))
	}
	srv := natstest.Server(t)
	nc := natstest.Conn(t, srv)
	js := natstest.JetStream(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	storeRuns(ctx, t, js, names, n, rec)
	fillInputs(ctx, t, js, names, n)
	writeIndex(ctx, t, js, names, n, rec)
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := n - 1; i >= 0; i-- {
		if rare(i) {
			want = append(want, fmt.Sprintf("s-%07d", i))
		}
	}
	var got []string
	cursor := ""
	for pages := 0; pages <= len(want); pages++ {
		before := nc.Stats().InMsgs
		page, err := c.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "rare"}}, Sort: client.SortUpdate, Limit: limit, Cursor: cursor, Wait: -1})
		if err != nil {
			t.Fatal(err)
		}
		// The replies of the first page: the marks, the entries and heads
		// of about a page, a few answers and ends of batches.
		if read := nc.Stats().InMsgs - before; pages == 0 && read >= uint64(len(want)/2) {
			t.Errorf("the first page read %d messages for %d runs; the value has %d entries: it read them all", read, limit, len(want))
		}
		for _, r := range page.Runs {
			got = append(got, r.Status.Run)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages hold %d runs, want %d; first differences: %s", len(got), len(want), firstDiff(got, want))
	}
}
