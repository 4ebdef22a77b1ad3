package replay_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
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
)

// historyOthers lists the other messages BenchmarkReadHistoryAmongOthers
// stores beside the run's, one stream per figure.
var historyOthers = flag.String("history-others", "10000,100000,1000000",
	"BenchmarkReadHistoryAmongOthers: comma-separated counts of other messages in the input stream (10000000 takes about 4 minutes and 700 MB to store)")

// BenchmarkReadHistoryAmongOthers reads the 10-message history of one run
// from an input stream (file storage, 16 partitions) that also holds
// 10,000, 100,000 or 1,000,000 messages of other runs (-history-others
// changes the list), its own spread evenly among them (a run that lived
// while the others came and went), all on one subject (ten events of one
// type, the case the per-subject index locates least): the cost of
// `jetflow history` and `replay` as the stream grows. The run's record
// names all ten inputs it applied (record=all, as a dispatcher keeps it),
// only its last five (record=recent: an event loop longer than the
// record's applied history, whose older inputs a sequence page names, as
// a dispatcher writes one each runrecord.PageSize inputs; here five), or
// the run has none (record=none: a tombstone of a run removed with its
// history kept, whose final page names the last five; record=old: a run
// from before pages, or a record that cannot be read). cpu-ms/op is the process's
// CPU, the server's included. The million takes 15 to 30 seconds to
// store; -short skips it.
//
//	go test ./replay -run '^$' -bench ReadHistoryAmongOthers -benchtime 50x -benchmem
func BenchmarkReadHistoryAmongOthers(b *testing.B) {
	var counts []int
	for _, f := range strings.Split(*historyOthers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 10 {
			b.Fatalf("-history-others: %q is not a count of at least 10 messages", f)
		}
		counts = append(counts, n)
	}
	for _, others := range counts {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			if testing.Short() && others > 100_000 {
				b.Skip("-short: storing a million messages takes about 15 seconds")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			srv := natstest.Server(b)
			js := natstest.JetStream(b, natstest.Conn(b, srv))
			names, err := subjects.New("hb")
			if err != nil {
				b.Fatal(err)
			}
			if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: jetstream.FileStorage}); err != nil {
				b.Fatal(err)
			}
			seqs := fill(ctx, b, js, names, others)
			older, recent := seqs[:len(seqs)/2], seqs[len(seqs)/2:]
			for _, record := range []struct {
				name    string
				applied []uint64
				pages   [][]uint64
			}{
				{"all", seqs, nil},
				{"recent", recent, [][]uint64{older}},
				{"none", nil, [][]uint64{older, recent}},
				{"old", nil, nil},
			} {
				b.Run("record="+record.name, func(b *testing.B) {
					kv, err := js.KeyValue(ctx, names.RunBucket())
					if err != nil {
						b.Fatal(err)
					}
					if err := kv.Purge(ctx, "the-run"); err != nil {
						b.Fatal(err)
					}
					storePages(ctx, b, js, names, record.pages)
					if record.applied != nil {
						rec := runrecord.Record{State: json.RawMessage(`{}`), Applied: record.applied}
						data, err := rec.Encode()
						if err != nil {
							b.Fatal(err)
						}
						if _, err := kv.Put(ctx, "the-run", data); err != nil {
							b.Fatal(err)
						}
					}
					b.ResetTimer()
					cpu := cpuTime()
					for range b.N {
						h, err := replay.ReadHistory(ctx, js, names, "the-run")
						if err != nil || len(h) != 10 {
							b.Fatalf("history of %d messages, %v; want 10", len(h), err)
						}
					}
					// The server runs in this process: its CPU is in the figure.
					b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				})
			}
		})
	}
}

// storePages replaces the-run's sequence pages by pages, as a
// dispatcher writes them (dispatcher/pages.go).
func storePages(ctx context.Context, b *testing.B, js jetstream.JetStream, names subjects.Names, pages [][]uint64) {
	b.Helper()
	inputs, err := js.Stream(ctx, names.InputStream())
	if err != nil {
		b.Fatal(err)
	}
	if err := inputs.Purge(ctx, jetstream.WithPurgeSubject(names.RunPages("the-run"))); err != nil {
		b.Fatal(err)
	}
	for _, p := range pages {
		if _, err := js.Publish(ctx, names.Page("the-run", p[0]), runrecord.EncodePage(p)); err != nil {
			b.Fatal(err)
		}
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

// fill stores n events of n/10 other runs and, every n/10 of them, one
// of the-run's 10, asynchronously, and returns the-run's sequences.
func fill(ctx context.Context, b *testing.B, js jetstream.JetStream, names subjects.Names, n int) []uint64 {
	b.Helper()
	var seqs []uint64
	futures := make([]jetstream.PubAckFuture, 0, 1024)
	wait := func() {
		for _, f := range futures {
			select {
			case ack := <-f.Ok():
				if f.Msg().Subject == names.Event("the-run", "x") {
					seqs = append(seqs, ack.Sequence)
				}
			case err := <-f.Err():
				b.Fatal(err)
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
		futures = futures[:0]
	}
	for i := range n + 10 {
		subject := names.Event(fmt.Sprintf("other-%d", i/10), "x")
		if i%(n/10+1) == 0 {
			subject = names.Event("the-run", "x")
		}
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: []byte(`{"n":1}`)})
		if err != nil {
			b.Fatal(err)
		}
		if futures = append(futures, f); len(futures) == cap(futures) {
			wait()
		}
	}
	wait()
	return seqs
}
