package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

// TestReadHistoryReadsOnlyTheRunsMessages reads the history of a run
// whose first input is the stream's first message and whose inputs are
// spread among those of runs with similar ids, on partitioned and
// unpartitioned input streams, with no record, a record naming its
// inputs, one naming only its recent inputs (an event loop longer than
// the record's applied history), one naming some in the middle of a
// subject, and one naming other runs' inputs: each read must be exactly
// the run's messages, in stream order, equal to what an ordered consumer
// of RunInputs delivers. Without a record and with one naming its recent
// inputs, the read must also receive each of the run's messages once: a
// walk that starts before what it has found, or goes on past the last
// message missing, reads some twice.
func TestReadHistoryReadsOnlyTheRunsMessages(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			srv := natstest.Server(t)
			js := natstest.JetStream(t, natstest.Conn(t, srv))
			names := subjects.Must("rh")
			opts := provision.ProvisionOptions{Storage: jetstream.FileStorage}
			if !partitioned {
				cfg := provision.InputStreamConfig(names, opts)
				cfg.SubjectTransform, cfg.Metadata, cfg.Sources = nil, nil, nil
				if _, err := js.CreateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			if err := provision.Provision(ctx, js, names, opts); err != nil {
				t.Fatal(err)
			}
			const run = "r"
			// The run's inputs: its start first of all, one event of one
			// type, five of another, four results, a cancel; the others'
			// between each two of them.
			mine := []string{
				names.Start(run), names.Event(run, "a"), names.Result(run), names.Event(run, "b"),
				names.Event(run, "b"), names.Result(run), names.Event(run, "b"), names.Result(run),
				names.Event(run, "b"), names.Event(run, "b"), names.Result(run), names.Cancel(run),
			}
			var want, others []uint64
			publish := func(subject string, i int) uint64 {
				m := nats.NewMsg(subject)
				m.Data = fmt.Appendf(nil, `{"i":%d}`, i)
				if i%3 == 0 {
					m.Header.Set("Wf-Test", fmt.Sprint(i))
				}
				ack, err := js.PublishMsg(ctx, m)
				if err != nil {
					t.Fatal(err)
				}
				return ack.Sequence
			}
			for i, subject := range mine {
				want = append(want, publish(subject, i))
				for j, other := range []string{"r1", "rr", "r-", "x" + run} {
					others = append(others, publish(names.Event(other, "b"), 100*i+j), publish(names.Result(other), 100*i+j+50))
				}
			}
			if want[0] != 1 {
				t.Fatalf("the run's start is at seq %d, want the stream's first", want[0])
			}
			reference := orderedRead(ctx, t, js, names, run)
			if stored := reference[0].Subject; (stored == names.Start(run)) == partitioned {
				t.Fatalf("the run's start is stored on %s: the stream is not what the case says", stored)
			}
			if got := seqsOf(reference); !slices.Equal(got, want) {
				t.Fatalf("the ordered consumer read seqs %v, want %v", got, want)
			}
			kv, err := js.KeyValue(ctx, names.RunBucket())
			if err != nil {
				t.Fatal(err)
			}
			spy := replies(ctx, t, natstest.Conn(t, srv))
			inputs, err := js.Stream(ctx, names.InputStream())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name  string
				hints []uint64
				once  bool
				pages [][]uint64
			}{
				{"no record", nil, true, nil},
				{"a record naming its inputs", want[1 : len(want)-1], false, nil},
				{"a record naming its recent inputs", want[len(want)/2:], true, nil},
				{"a record naming some in the middle", want[4:8], false, nil},
				{"a record naming other runs' inputs", append(slices.Clone(others), 0, 999999, want[4]), false, nil},
				{"no record, pages naming its inputs", nil, true, [][]uint64{want[1:6], want[6:]}},
				{"a record naming its recent inputs, a page the older", want[len(want)/2:], true, [][]uint64{want[:len(want)/2]}},
				{"pages naming other runs' inputs and some of its own", nil, false, [][]uint64{append(slices.Clone(others), 0, 999999, want[4]), want[7:9]}},
			} {
				// The run's sequence pages, as dispatchers write them.
				if err := inputs.Purge(ctx, jetstream.WithPurgeSubject(names.RunPages(run))); err != nil {
					t.Fatal(err)
				}
				for _, p := range c.pages {
					if _, err := js.Publish(ctx, names.Page(run, p[0]), runrecord.EncodePage(p)); err != nil {
						t.Fatal(err)
					}
				}
				if c.hints == nil {
					_ = kv.Purge(ctx, run)
				} else {
					rec := runrecord.Record{State: json.RawMessage(`{}`), Applied: c.hints}
					data, err := rec.Encode()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := kv.Put(ctx, run, data); err != nil {
						t.Fatal(err)
					}
				}
				spy.reset(t)
				got, err := replay.ReadHistory(ctx, js, names, run)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if received := spy.seqs(t, names, run); c.once && !slices.Equal(received, want) {
					t.Fatalf("%s: the read received the run's messages at seqs %v, want each of %v once", c.name, received, want)
				}
				if s := seqsOf(got); !slices.Equal(s, want) {
					t.Fatalf("%s: read seqs %v, want %v (the run's own, its start first)", c.name, s, want)
				}
				for i, m := range got {
					r := reference[i]
					if m.Subject != r.Subject || string(m.Data) != string(r.Data) || !m.Time.Equal(r.Time) || fmt.Sprint(m.Header) != fmt.Sprint(r.Header) {
						t.Fatalf("%s: message %d is %+v, the ordered consumer's %+v", c.name, i, m, r)
					}
					if id, _, _, err := names.ParseInput(m.Subject); err != nil || id != run {
						t.Fatalf("%s: message %d on %s is not the run's", c.name, i, m.Subject)
					}
				}
				few, err := replay.ReadHistories(ctx, js, names, 0, map[string]bool{run: true, "r1": true})
				if err != nil {
					t.Fatal(err)
				}
				if s := seqsOf(few[run]); !slices.Equal(s, want) {
					t.Fatalf("%s: ReadHistories read seqs %v, want %v", c.name, s, want)
				}
				if len(few["r1"]) != 2*len(mine) {
					t.Fatalf("%s: ReadHistories read %d messages of r1, want %d", c.name, len(few["r1"]), 2*len(mine))
				}
			}
			if h, err := replay.ReadHistory(ctx, js, names, "nobody"); err != nil || h != nil {
				t.Fatalf("history of a run without messages: %v, %v; want none", h, err)
			}
		})
	}
}

// replySpy sees every reply sent to an inbox on its server: the messages
// a read receives.
type replySpy struct {
	nc  *nats.Conn
	sub *nats.Subscription
}

func replies(ctx context.Context, t *testing.T, nc *nats.Conn) *replySpy {
	t.Helper()
	sub, err := nc.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	return &replySpy{nc: nc, sub: sub}
}

// reset forgets what the spy has seen so far.
func (s *replySpy) reset(t *testing.T) {
	t.Helper()
	s.seqs(t, subjects.Names{}, "")
}

// seqs returns, sorted, the stream sequences of the replies since the
// last call that carried a stored message of run (one entry each time
// one was received).
func (s *replySpy) seqs(t *testing.T, names subjects.Names, run string) []uint64 {
	t.Helper()
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for {
		m, err := s.sub.NextMsg(0)
		if err != nil {
			break // nothing more pending
		}
		subj, seq := m.Header.Get(jetstream.SubjectHeader), m.Header.Get(jetstream.SequenceHeader)
		if run == "" || subj == "" || seq == "" {
			continue
		}
		if id, _, _, err := names.ParseInput(subj); err != nil || id != run {
			continue
		}
		n, err := strconv.ParseUint(seq, 10, 64)
		if err != nil {
			t.Fatalf("reply on %s with sequence %q", subj, seq)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func seqsOf(msgs []replay.Message) []uint64 {
	out := make([]uint64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

// orderedRead is the read by an ordered consumer of RunInputs(run), the
// way histories were read before they were read by subject.
func orderedRead(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run string) []replay.Message {
	t.Helper()
	cons, err := js.OrderedConsumer(ctx, names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{names.RunInputs(run)}})
	if err != nil {
		t.Fatal(err)
	}
	var out []replay.Message
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		meta, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, replay.Message{Seq: meta.Sequence.Stream, Time: meta.Timestamp, Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		if meta.NumPending == 0 {
			return out
		}
	}
}
