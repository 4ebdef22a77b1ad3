package runindex

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// record is a waiting run's record as the dispatcher writes it.
const record = `{"state":{"workflow":"gate","revision":"g1","runId":"r1","status":"waiting","generation":3,"context":{"input":{"customer":"c-7","qty":5,"tags":["a"],"order":{"id":"o/1"}},"data":{"n":null},"event":null,"results":{},"visits":{"/states/gate":1}},"pending":null,"seq":1,"control":{"active":["/states/gate"],"history":{},"timers":[],"serial":0,"time":1796183856843}},"status":{"run":"r1","workflow":"gate","revision":"g1","status":"waiting","state":"/states/gate","time":1796183856843},"applied":[7],"order":[[7,7]]}`

func search(string, string) (map[string]string, error) {
	return map[string]string{"customer": "/input/customer", "qty": "/input/qty", "order": "/input/order/id", "tags": "/input/tags", "n": "/data/n", "none": "/input/nope"}, nil
}

func TestBuildEntry(t *testing.T) {
	t.Parallel()
	at := time.Unix(0, 1234)
	e, err := Build("r1", []byte(record), 9, at, search)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.IndexEntry{
		Run: "r1", Workflow: "gate", Revision: "g1", Status: wire.StatusWaiting, State: "/states/gate", Time: 1796183856843, StartSeq: 7, Updated: 1234, RecordRev: 9,
		Search: map[string]string{"customer": "c-7", "qty": "5", "order": "o/1"},
	}
	got, _ := json.Marshal(e)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("entry\n got %s\nwant %s", got, exp)
	}
	names := subjects.Must("")
	h := &wire.IndexHead{RecordRev: 9, Workflow: e.Workflow, Status: e.Status, Search: e.Search}
	subs := strings.Join(Subjects(names, "r1", h), " ")
	if subs != "jetflow.idx.r.gate.waiting.r1 jetflow.idx.a.customer.c-7.gate.waiting.r1 jetflow.idx.a.order.=by8x.gate.waiting.r1 jetflow.idx.a.qty.5.gate.waiting.r1" {
		t.Errorf("subjects %s", subs)
	}
	if Subjects(names, "r1", &wire.IndexHead{RecordRev: 10}) != nil {
		t.Error("a deleted run's head names subjects")
	}
}

func TestBuildTombstone(t *testing.T) {
	t.Parallel()
	tomb := `{"removed":{"run":"r1","at":5,"workflow":"gate","revision":"g1","status":"done","settled":4,"until":9}}`
	e, err := Build("r1", []byte(tomb), 3, time.Unix(0, 1), search)
	if err != nil || e.Status != wire.StatusRemoved || e.Workflow != "gate" || e.Search != nil || e.Time != 5 {
		t.Errorf("tombstone entry %+v, %v", e, err)
	}
	if _, err := Build("r1", []byte(`{"state":`), 3, time.Unix(0, 1), search); err == nil {
		t.Error("a broken record built an entry")
	}
}

// BenchmarkBuild is the CPU an indexer spends on one record change
// besides NATS: decoding the record and building its entry and head. It
// reports the process's CPU time per change (cpu-ns/op) beside the wall
// time, which a loaded machine inflates.
//
// search is a waiting run's record under six search attributes; plain a
// done one-task run's record (its result in the state and the status)
// under none, as most revisions are.
func BenchmarkBuild(b *testing.B) {
	b.Run("search", func(b *testing.B) { benchBuild(b, record, search) })
	b.Run("plain", func(b *testing.B) { benchBuild(b, doneRecord, noSearch) })
}

// doneRecord is a one-task run's record once done.
const doneRecord = `{"state":{"workflow":"one","revision":"one/1","runId":"r1","status":"done","generation":2,"context":{"input":{"order":"o-17","items":[{"sku":"a-1","qty":2},{"sku":"b-7","qty":1}],"customer":{"id":"c-7","tier":"gold"}},"data":{"checked":{"ok":true,"reserved":["a-1","b-7"],"at":"2026-12-04T10:00:00Z"}},"event":null,"results":{"/states/check":{"ok":true,"reserved":["a-1","b-7"],"at":"2026-12-04T10:00:00Z"}},"visits":{"/states/check":1,"/states/done":1}},"pending":null,"seq":2,"control":{"active":["/states/done"],"history":{},"timers":[],"serial":0,"time":1796183856843}},"status":{"run":"r1","workflow":"one","revision":"one/1","status":"done","state":"/states/done","result":{"ok":true,"reserved":["a-1","b-7"],"at":"2026-12-04T10:00:00Z"},"time":1796183856843},"applied":[7,9],"order":[[7,7],[9,9]],"timers":true,"deadlineOnly":true}`

func noSearch(string, string) (map[string]string, error) { return nil, nil }

func benchBuild(b *testing.B, rec string, search SearchFunc) {
	defer checkBuild.Store(checkBuild.Swap(false)) // time Build, not its check
	names := subjects.Must("")
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for b.Loop() {
		e, err := Build("r1", []byte(rec), 9, time.Unix(0, 1), search)
		if err != nil {
			b.Fatal(err)
		}
		h := &wire.IndexHead{RecordRev: 9, Workflow: e.Workflow, Status: e.Status, Search: e.Search}
		if _, err := json.Marshal(e); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(h); err != nil {
			b.Fatal(err)
		}
		_ = Subjects(names, "r1", h)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
