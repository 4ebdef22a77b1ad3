package dispatcher

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// eventLoop waits for event "x" for ever, until a "stop": a long-lived
// run whose inputs outnumber its record's applied history.
const eventLoop = `{
  "$workflow": "0.2",
  "revision": "loop/1",
  "initial": "wait",
  "states": {
    "wait": {"on": [{"event": "x", "to": "wait"}, {"event": "stop", "to": "done"}]},
    "done": {"final": true}
  }
}`

// walks counts the history reads' walks on a connection's server: the
// batched direct gets by next_by_subj (replay's step 5), which scan the
// stream between a run's messages.
func walks(t *testing.T, nc *nats.Conn) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := nc.Subscribe("$JS.API.DIRECT.GET.>", func(m *nats.Msg) {
		if bytes.Contains(m.Data, []byte(`"next_by_subj"`)) && bytes.Contains(m.Data, []byte(`"batch"`)) {
			n.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// runSeqs is the sequences of the run's inputs in the input stream.
func (b *bundle) runSeqs(t *testing.T, runID string) []uint64 {
	t.Helper()
	h, err := replay.ReadHistory(testCtx(t), b.js, b.names, runID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, m := range h {
		seqs = append(seqs, m.Seq)
	}
	return seqs
}

// pageSeqs reads the run's sequence pages: each page's sequences, by
// page subject.
func (b *bundle) pageSeqs(t *testing.T, runID string) map[string][]uint64 {
	t.Helper()
	ctx := testCtx(t)
	info, err := b.inputs.Info(ctx, jetstream.WithSubjectFilter(b.names.RunPages(runID)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]uint64{}
	for subj, n := range info.State.Subjects {
		if n != 1 {
			t.Errorf("page subject %s holds %d messages, want 1", subj, n)
		}
		m, err := b.inputs.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // purged since the count: a removal racing this look
		}
		if err != nil {
			t.Fatal(err)
		}
		if out[subj], err = runrecord.DecodePage(m.Data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestPagesNameEveryInputOfALongRun: a run of 300 events past its start
// (its record names only its last 128 inputs) gets a page each 128
// inputs, and its history is read whole with no walk of the stream; once
// retention removes it from a stream that keeps history, its final page
// names the rest, and the read of the run without a record walks
// nothing either. Without pages (9eee159) both reads walk.
func TestPagesNameEveryInputOfALongRun(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t)
	nc := natstest.Conn(t, srv)
	b := &bundle{srv: srv, nc: nc, js: natstest.JetStream(t, nc), names: subjects.Must(""), loader: &fakeLoader{prog: &fakeProgram{}}}
	// A stream made before retention denies purges: removals keep history.
	kept := provision.InputStreamConfig(b.names, provision.ProvisionOptions{})
	kept.DenyPurge = true
	if _, err := b.js.CreateStream(testCtx(t), kept); err != nil {
		t.Fatal(err)
	}
	b.provision(t, provision.ProvisionOptions{})
	b.withEngine(t, map[string]string{"loop": eventLoop})
	b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second})
	const events = 300
	b.publish(t, b.names.Start("long"), wire.Start{Workflow: "loop"}, "start/long")
	b.publish(t, b.names.Start("other"), wire.Start{Workflow: "loop"}, "start/other")
	for range events {
		b.publishAsync(t, b.names.Event("long", "x"), map[string]int{"n": 1})
		b.publishAsync(t, b.names.Event("other", "x"), map[string]int{"n": 1})
	}
	b.publish(t, b.names.Event("long", "stop"), nil, "")
	rec := b.waitStatus(t, "long", wire.StatusDone, 30*time.Second)
	b.consumerSettled(t, 30*time.Second)

	walked := walks(t, nc)
	all := b.runSeqs(t, "long")
	if len(all) != events+2 {
		t.Fatalf("the history holds %d messages, want %d", len(all), events+2)
	}
	if n := walked.Load(); n != 0 {
		t.Errorf("the history read with the record walked the stream %d times, want none", n)
	}
	if len(rec.Applied) != 128 {
		t.Fatalf("the record names %d applied inputs, want 128", len(rec.Applied))
	}
	// Pages at the 128th and 256th message applied (the start is the
	// first): every input before the record's window is in one.
	pages := b.pageSeqs(t, "long")
	named := slices.Clone(rec.Applied)
	for subj, seqs := range pages {
		if len(seqs) != runrecord.PageSize || subj != b.names.Page("long", seqs[0]) {
			t.Errorf("page %s names %d sequences from %d", subj, len(seqs), seqs[0])
		}
		named = append(named, seqs...)
	}
	slices.Sort(named)
	if len(pages) != 2 || !slices.Equal(slices.Compact(named), all) {
		t.Fatalf("%d pages and the record name %v, the history is %v", len(pages), named, all)
	}

	// Removed with its history kept: the tombstone leaves no record; the
	// final page names what the earlier ones do not.
	if r := b.tombstone(t, "long", 30*time.Second); !r.HistoryKept {
		t.Fatalf("tombstone %+v: the history should be kept", r)
	}
	b.consumerSettled(t, 30*time.Second)
	if pages := b.pageSeqs(t, "long"); len(pages) != 3 {
		t.Fatalf("%d pages after the removal, want 3", len(pages))
	}
	walked.Store(0)
	if got := b.runSeqs(t, "long"); !slices.Equal(got, all) {
		t.Fatalf("the removed run's history is %v, want %v", got, all)
	}
	if n := walked.Load(); n != 0 {
		t.Errorf("the history read of the removed run walked the stream %d times, want none", n)
	}
}

// TestPagesRemovedWithTheHistory: where removal purges the history, it
// purges the run's pages with it.
func TestPagesRemovedWithTheHistory(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"loop": eventLoop})
	b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second})
	b.publish(t, b.names.Start("gone"), wire.Start{Workflow: "loop"}, "start/gone")
	for range 130 {
		b.publishAsync(t, b.names.Event("gone", "x"), map[string]int{"n": 1})
	}
	b.publish(t, b.names.Event("gone", "stop"), nil, "")
	b.waitStatus(t, "gone", wire.StatusDone, 30*time.Second)
	b.consumerSettled(t, 30*time.Second)
	if pages := b.pageSeqs(t, "gone"); len(pages) != 1 {
		t.Fatalf("%d pages before the removal, want 1", len(pages))
	}
	if r := b.tombstone(t, "gone", 30*time.Second); r.HistoryKept {
		t.Fatalf("tombstone %+v: the history should be purged", r)
	}
	natstest.WaitFor(t, 30*time.Second, "the pages purged", func() error {
		if n := len(b.pageSeqs(t, "gone")); n != 0 {
			return errorf("%d pages left", n)
		}
		return nil
	})
	if n := b.historyOf(t, "gone"); n != 0 {
		t.Errorf("the removed run's history holds %d messages", n)
	}
}

// TestPageRepeatStoresNothingNew: a page written again (a step repeated
// after a crash between the page and the record's save, or by another
// dispatcher) leaves the stored one as it was, even with other content.
func TestPageRepeatStoresNothingNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{})
	ctx := context.Background()
	log := quietLogger(t)
	d.storePage(ctx, "r", []uint64{5, 9, 12}, log)
	d.storePage(ctx, "r", []uint64{5, 9, 12}, log)
	d.storePage(ctx, "r", []uint64{5, 10, 11}, log)
	d.storePage(ctx, "r", []uint64{20, 21}, log)
	want := map[string][]uint64{b.names.Page("r", 5): {5, 9, 12}, b.names.Page("r", 20): {20, 21}}
	got := b.pageSeqs(t, "r")
	if len(got) != len(want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	for subj, seqs := range want {
		if !slices.Equal(got[subj], seqs) {
			t.Fatalf("pages %v, want %v", got, want)
		}
	}
	if !d.pg.writing(time.Now()) {
		t.Error("a repeated page turned pages off")
	}
}

// BenchmarkEventLoopPages runs b.N events through one run of eventLoop
// on a dispatcher (in-process server, file storage), with sequence pages
// (one stored each runrecord.PageSize events) and without (an input
// stream provisioned before them): what pages cost the event loop.
// cpu-ms/event is the process's CPU, the server's included.
//
//	go test ./dispatcher -run '^$' -bench EventLoopPages -benchtime 2560x -benchmem -count 2
func BenchmarkEventLoopPages(b *testing.B) {
	for _, pages := range []bool{false, true} {
		b.Run(map[bool]string{false: "pages=off", true: "pages=on"}[pages], func(b *testing.B) {
			srv := natstest.Server(b)
			nc := natstest.Conn(b, srv)
			bb := &bundle{srv: srv, nc: nc, js: natstest.JetStream(b, nc), names: subjects.Must(""), loader: &fakeLoader{prog: &fakeProgram{}}}
			bb.provision(b, provision.ProvisionOptions{})
			if !pages {
				cfg := provision.InputStreamConfig(bb.names, provision.ProvisionOptions{})
				cfg.Subjects = []string{bb.names.InputAll()}
				if _, err := bb.js.UpdateStream(testCtx(b), cfg); err != nil {
					b.Fatal(err)
				}
			}
			bb.withEngine(b, map[string]string{"loop": eventLoop})
			d := bb.dispatcher(b, Config{})
			if d.pg.on != pages {
				b.Fatalf("pages on: %v, want %v", d.pg.on, pages)
			}
			bb.publish(b, bb.names.Start("loop"), wire.Start{Workflow: "loop"}, "start/loop")
			bb.waitStatus(b, "loop", wire.StatusWaiting, 30*time.Second)
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				bb.publishAsync(b, bb.names.Event("loop", "x"), map[string]int{"n": 1})
			}
			bb.publish(b, bb.names.Event("loop", "stop"), nil, "")
			bb.waitStatus(b, "loop", wire.StatusDone, 5*time.Minute)
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/event")
			info, err := bb.inputs.Info(testCtx(b), jetstream.WithSubjectFilter(bb.names.RunPages("loop")))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(info.State.Subjects)), "pages")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestPageTimeoutPausesPagesForAWhile: a page write that timed out stops
// page writing for pagesPause, not for the dispatcher's life (an outage
// would otherwise end pages until a restart).
func TestPageTimeoutPausesPagesForAWhile(t *testing.T) {
	var p pages
	p.on = true
	now := time.Unix(1000, 0)
	p.offUntil.Store(now.Add(pagesPause).UnixNano())
	if p.writing(now) || p.writing(now.Add(pagesPause-time.Millisecond)) {
		t.Error("pages written within the pause")
	}
	if !p.writing(now.Add(pagesPause)) {
		t.Error("pages not written again after the pause")
	}
}
