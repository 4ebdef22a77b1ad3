package dispatcher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// purgeWatch records the purge requests of one filter subject sent to a
// stream, and how many messages each took (from the server's replies).
type purgeWatch struct {
	mu      sync.Mutex
	filter  string
	asked   map[string]bool   // reply subjects of the filter's requests
	answers map[string]uint64 // messages each purge answer took, by reply subject
}

func watchPurges(t *testing.T, b *bundle, stream, filter string) *purgeWatch {
	t.Helper()
	w := &purgeWatch{filter: filter, asked: map[string]bool{}, answers: map[string]uint64{}}
	nc := natstest.Conn(t, b.srv)
	// One channel for both subscriptions. _INBOX.> hears every answer
	// the server sends (publish acknowledgements, KV reads): a full
	// channel drops messages, so it is large.
	msgs := make(chan *nats.Msg, 1<<16)
	for _, subj := range []string{"$JS.API.STREAM.PURGE." + stream, "_INBOX.>"} {
		if _, err := nc.ChanSubscribe(subj, msgs); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var loop sync.WaitGroup
	loop.Go(func() {
		for {
			select {
			case m := <-msgs:
				w.heard(m)
			case <-done:
				return
			}
		}
	})
	t.Cleanup(func() { close(done); loop.Wait() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *purgeWatch) heard(m *nats.Msg) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m.Reply != "" {
		var req struct {
			Filter string `json:"filter"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.Filter == w.filter {
			w.asked[m.Reply] = true
		}
		return
	}
	// The server may send the answer before this connection gets its
	// copy of the request: every purge answer is kept, and matched to
	// the filter's requests when read.
	if !bytes.Contains(m.Data, []byte(`"purged"`)) {
		return
	}
	var resp struct {
		Success bool    `json:"success"`
		Purged  *uint64 `json:"purged"`
	}
	if json.Unmarshal(m.Data, &resp) == nil && resp.Success && resp.Purged != nil {
		w.answers[m.Subject] = *resp.Purged
	}
}

// took is how many messages each answered purge of the filter took.
func (w *purgeWatch) took() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []uint64
	for reply := range w.asked {
		if n, ok := w.answers[reply]; ok {
			out = append(out, n)
		}
	}
	return out
}

// TestRemovalPurgesOneInputAtATime: a removed run's history goes one
// message per purge, archived or not, removed with a bucket or one by
// one. A purge that takes several messages makes the server count every
// input consumer's pending messages again, a walk of the stream's
// subjects that cost a removal more than its run at 12,000 runs; one
// that takes one message does not.
func TestRemovalPurgesOneInputAtATime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		archive, oneByOne bool
		history           uint64 // start, event, and one by one the removal's own input
	}{
		{false, false, 2},
		{true, false, 2},
		{false, true, 3},
		{true, true, 3},
	} {
		t.Run(fmt.Sprintf("archive=%v/one-by-one=%v", tc.archive, tc.oneByOne), func(t *testing.T) {
			t.Parallel()
			b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
			if tc.oneByOne {
				b.withoutReapSubjects(t)
			}
			w := watchPurges(t, b, b.names.InputStream(), b.names.RunInputs("gone"))
			d := b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second, Archive: tc.archive})
			if d.ret.batched == tc.oneByOne {
				t.Fatalf("removals batched: %v", d.ret.batched)
			}
			b.publish(t, b.names.Start("gone"), wire.Start{Workflow: "forever"}, "start/gone")
			b.waitStatus(t, "gone", wire.StatusWaiting, 10*time.Second)
			b.publish(t, b.names.Event("gone", "x"), nil, "")
			b.waitStatus(t, "gone", wire.StatusDone, 10*time.Second)
			if r := b.tombstone(t, "gone", 20*time.Second); r.Archived != tc.archive {
				t.Errorf("archived %v, want %v", r.Archived, tc.archive)
			}
			natstest.WaitFor(t, 10*time.Second, "the history purged", func() error {
				if n := b.historyOf(t, "gone"); n != 0 {
					return errorf("%d messages left", n)
				}
				return nil
			})
			natstest.WaitFor(t, 5*time.Second, "the purges answered", func() error {
				var sum uint64
				for _, n := range w.took() {
					sum += n
				}
				if sum != tc.history {
					return errorf("purges took %v, want %d messages in all", w.took(), tc.history)
				}
				return nil
			})
			for _, n := range w.took() {
				if n > 1 {
					t.Errorf("a purge of the run's history took %d messages at once (all: %v)", n, w.took())
				}
			}
		})
	}
}
