package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// entry is a run bucket entry as a watch delivers it.
type kvEntry struct {
	key  string
	val  []byte
	rev  uint64
	op   jetstream.KeyValueOp
	when time.Time
}

func (e kvEntry) Bucket() string                  { return "runs" }
func (e kvEntry) Key() string                     { return e.key }
func (e kvEntry) Value() []byte                   { return e.val }
func (e kvEntry) Revision() uint64                { return e.rev }
func (e kvEntry) Created() time.Time              { return e.when }
func (e kvEntry) Delta() uint64                   { return 0 }
func (e kvEntry) Operation() jetstream.KeyValueOp { return e.op }

var statusCycle = []string{"running", "waiting", "done", "failed", "cancelled"}

// record is a stored run record with the fields a summary reads.
func record(i int) []byte {
	status := statusCycle[i%len(statusCycle)]
	return fmt.Appendf(nil, `{"state":{"workflow":"wf-%d","revision":"r%d","runId":"run-%06d","status":%q,"control":{"active":["/states/s%d"],"time":%d},"context":{"input":%q}},"status":{"status":%q,"time":%d}}`,
		i%3, i%2, i, status, i%4, 1000+i, strings.Repeat("x", 64), status, 2000+i)
}

// fill loads n runs, run-000000 at revision 1 and so on, then the end of
// the initial values.
func filled(n int) *index {
	x := newIndex()
	for i := range n {
		x.apply(kvEntry{key: fmt.Sprintf("run-%06d", i), val: record(i), rev: uint64(i + 1), op: jetstream.KeyValuePut, when: time.UnixMilli(int64(i))})
	}
	x.apply(nil)
	return x
}

func TestIndexPaging(t *testing.T) {
	t.Parallel()
	const n = 1000
	x := filled(n)
	cases := []struct {
		q    Query
		want int
	}{
		{Query{Limit: 50}, n},
		{Query{Limit: 7, Status: "waiting"}, n / 5},
		{Query{Limit: 500, Workflow: "wf-1"}, 333},
		{Query{Limit: 13, Workflow: "wf-2", Status: "done"}, 67},
		{Query{Limit: 10, Search: "run-0001"}, 100},
		{Query{Limit: 10, Search: "nope"}, 0},
	}
	for _, c := range cases {
		seen := map[string]bool{}
		var last uint64
		q := c.q
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatalf("%+v: paging does not end", c.q)
			}
			p := x.query(q)
			if p.Matched != c.want || p.Total != n || !p.Loaded {
				t.Fatalf("%+v: matched %d of %d, want %d of %d", c.q, p.Matched, p.Total, c.want, n)
			}
			if len(p.Runs) > q.Limit {
				t.Fatalf("%+v: %d runs on a page", c.q, len(p.Runs))
			}
			for _, r := range p.Runs {
				if seen[r.ID] {
					t.Fatalf("%+v: %s on two pages", c.q, r.ID)
				}
				if last != 0 && r.Rev >= last {
					t.Fatalf("%+v: %s (rev %d) after rev %d: not most recent first", c.q, r.ID, r.Rev, last)
				}
				seen[r.ID], last = true, r.Rev
			}
			if p.Next == 0 {
				break
			}
			q.Before = p.Next
		}
		if len(seen) != c.want {
			t.Errorf("%+v: pages held %d runs, want %d", c.q, len(seen), c.want)
		}
	}
}

func TestIndexFollowsChanges(t *testing.T) {
	t.Parallel()
	x := filled(10)
	if c := x.counts(); c.Total != 10 || c.ByStatus["waiting"] != 2 || !c.Loaded {
		t.Fatalf("counts %+v", c)
	}
	// Running and waiting: runs 0 and 6 of wf-0 r0, run 1 of wf-1 r1.
	if a := x.activeRuns("wf-0"); len(a) != 1 || a["r0"] != 2 {
		t.Fatalf("active runs of wf-0: %v", a)
	}
	if a := x.activeRuns("wf-1"); len(a) != 1 || a["r1"] != 1 {
		t.Fatalf("active runs of wf-1: %v", a)
	}
	v0, changed := x.watch()
	// run-000001 (waiting) is done now and learnt its start; run-000002 is
	// deleted; run-000100 is new.
	x.setStarted("run-000001", 42)
	x.apply(kvEntry{key: "run-000001", val: record(2), rev: 11, op: jetstream.KeyValuePut})
	x.apply(kvEntry{key: "run-000002", rev: 12, op: jetstream.KeyValueDelete})
	x.apply(kvEntry{key: "run-000100", val: record(100), rev: 13, op: jetstream.KeyValuePut})
	select {
	case <-changed:
	default:
		t.Fatal("no change announced")
	}
	v, ids, complete := x.since(v0)
	if v != v0+3 || !complete || strings.Join(ids, ",") != "run-000001,run-000002,run-000100" {
		t.Fatalf("since: %d %v %v", v, ids, complete)
	}
	s, ok := x.get("run-000001")
	if !ok || s.Status != "done" || s.Started != 42 || s.Settled != 2002 || s.Rev != 11 {
		t.Fatalf("updated summary %+v", s)
	}
	if _, ok := x.get("run-000002"); ok {
		t.Fatal("deleted run still listed")
	}
	if c := x.counts(); c.Total != 10 || c.ByStatus["waiting"] != 1 || c.ByStatus["done"] != 2 || c.ByStatus["running"] != 3 {
		t.Fatalf("counts after changes %+v", c)
	}
	if p := x.query(Query{Limit: 1}); p.Runs[0].ID != "run-000100" {
		t.Fatalf("most recent run %s", p.Runs[0].ID)
	}
	// A value that is not a run record is left out.
	x.apply(kvEntry{key: "junk", val: []byte(`{"state":`), rev: 14, op: jetstream.KeyValuePut})
	if _, ok := x.get("junk"); ok {
		t.Fatal("junk indexed")
	}
}

func TestIndexChangeLogOverflow(t *testing.T) {
	t.Parallel()
	x := filled(1)
	v0, _ := x.watch()
	for i := range changeLog + 10 {
		x.apply(kvEntry{key: fmt.Sprintf("r-%d", i), val: record(i), rev: uint64(10 + i), op: jetstream.KeyValuePut})
	}
	if _, _, complete := x.since(v0); complete {
		t.Fatal("a reader older than the change log was not told to reload")
	}
	v1, _ := x.watch()
	x.apply(kvEntry{key: "last", val: record(1), rev: 1 << 20, op: jetstream.KeyValuePut})
	if _, ids, complete := x.since(v1); !complete || len(ids) != 1 || ids[0] != "last" {
		t.Fatalf("recent reader: %v %v", ids, complete)
	}
}

// BenchmarkQuery is one page view over 100,000 runs: a filter, a search,
// and the first page.
func BenchmarkQuery(b *testing.B) {
	x := filled(100_000)
	for _, q := range []Query{{Limit: 50}, {Limit: 50, Status: "waiting"}, {Limit: 50, Search: "run-09"}, {Limit: 50, Before: 50_000}} {
		b.Run(fmt.Sprintf("%+v", q), func(b *testing.B) {
			for b.Loop() {
				x.query(q)
			}
		})
	}
}

// BenchmarkApply is the index's cost of one record change.
func BenchmarkApply(b *testing.B) {
	x := filled(100_000)
	val := record(7)
	i := 0
	for b.Loop() {
		i++
		x.apply(kvEntry{key: fmt.Sprintf("run-%06d", i%100_000), val: val, rev: uint64(200_000 + i), op: jetstream.KeyValuePut})
	}
}

// TestIndexLogOrder: revisions arriving out of order still page most
// recent first, and the log's holes are compacted away.
func TestIndexLogOrder(t *testing.T) {
	t.Parallel()
	x := newIndex()
	for _, rev := range []uint64{5, 3, 9, 4, 7} {
		x.apply(kvEntry{key: fmt.Sprint("r", rev), val: record(int(rev)), rev: rev, op: jetstream.KeyValuePut})
	}
	x.apply(nil)
	var got []uint64
	for _, r := range x.query(Query{Limit: 10}).Runs {
		got = append(got, r.Rev)
	}
	if fmt.Sprint(got) != "[9 7 5 4 3]" {
		t.Fatalf("order %v", got)
	}
	// Updating one run over and over leaves holes until compaction.
	for i := range 5000 {
		x.apply(kvEntry{key: "r3", val: record(3), rev: uint64(10 + i), op: jetstream.KeyValuePut})
	}
	if len(x.log) > 2*len(x.runs)+1024 {
		t.Fatalf("log of %d for %d runs: not compacted", len(x.log), len(x.runs))
	}
	p := x.query(Query{Limit: 2})
	p2 := x.query(Query{Limit: 2, Before: p.Next})
	p3 := x.query(Query{Limit: 2, Before: p2.Next})
	ids := []string{}
	for _, page := range []Page{p, p2, p3} {
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
	}
	if strings.Join(ids, ",") != "r3,r9,r7,r5,r4" || p3.Next != 0 {
		t.Fatalf("pages %v, last next %d", ids, p3.Next)
	}
}
