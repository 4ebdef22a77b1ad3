package replay

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
)

var names = subjects.Must("")

// history builds messages of run r from "seq:kind@ms" items.
func history(t *testing.T, items ...string) []Message {
	t.Helper()
	var out []Message
	for _, it := range items {
		var seq uint64
		var kind string
		var ms int64
		head, at, _ := strings.Cut(it, "@")
		s, k, _ := strings.Cut(head, ":")
		for _, c := range s {
			seq = seq*10 + uint64(c-'0')
		}
		kind = k
		for _, c := range at {
			ms = ms*10 + int64(c-'0')
		}
		subject := names.Start("r")
		switch kind {
		case "event":
			subject = names.Event("r", "go")
		case "result":
			subject = names.Result("r")
		}
		out = append(out, Message{Seq: seq, Subject: subject, Time: time.UnixMilli(ms)})
	}
	return out
}

// order builds an Order from from, to pairs.
func order(pairs ...uint64) runrecord.Order {
	var o runrecord.Order
	for i := 0; i+1 < len(pairs); i += 2 {
		o = append(o, runrecord.Span{From: pairs[i], To: pairs[i+1]})
	}
	return o
}

func seqs(ms []Message) []uint64 {
	var out []uint64
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return out
}

func TestPlanByRecord(t *testing.T) {
	t.Parallel()
	msgs := history(t, "2:event", "5:start", "9:result", "12:result", "20:result", "31:event")
	cases := []struct {
		name      string
		order     runrecord.Order
		applied   []uint64
		refused   []uint64
		want, not []uint64
	}{
		{"stream order", order(5, 31), []uint64{5, 9, 12, 20, 31}, nil, []uint64{5, 9, 12, 20, 31}, []uint64{2}},
		{"window shorter than the run", order(5, 31), []uint64{20, 31}, nil, []uint64{5, 9, 12, 20, 31}, []uint64{2}},
		{"event before start applied after it", order(5, 5, 2, 2, 6, 31), []uint64{5, 2, 9, 12, 20, 31}, nil, []uint64{5, 2, 9, 12, 20, 31}, nil},
		{"late result", order(5, 11, 13, 20, 12, 12), []uint64{5, 9, 20, 12}, nil, []uint64{5, 9, 20, 12}, []uint64{2, 31}},
		{"late result before the window", order(5, 11, 13, 20, 12, 12), []uint64{20, 12}, nil, []uint64{5, 9, 20, 12}, []uint64{2, 31}},
		{"late result, window from it", order(5, 11, 13, 20, 12, 12), []uint64{12}, nil, []uint64{5, 9, 20, 12}, []uint64{2, 31}},
		{"terminated input inside a span", order(5, 31), []uint64{5, 9, 20, 31}, nil, []uint64{5, 9, 20, 31}, []uint64{2, 12}},
		{"input in flight inside a span", order(5, 20), []uint64{5, 9, 20}, nil, []uint64{5, 9, 20}, []uint64{2, 12, 31}},
		{"spans naming other runs' sequences", order(3, 10, 14, 40), []uint64{5, 9, 20, 31}, nil, []uint64{5, 9, 20, 31}, []uint64{2, 12}},
		{"refusal outside Applied", order(5, 31), []uint64{5, 9, 20, 31}, []uint64{12}, []uint64{5, 9, 12, 20, 31}, []uint64{2}},
		{"refusals outside Applied, late and last", order(5, 11, 13, 31, 12, 12), []uint64{5, 9, 20}, []uint64{12, 31}, []uint64{5, 9, 20, 31, 12}, []uint64{2}},
		{"refusal before the window", order(5, 31), []uint64{20, 31}, []uint64{12}, []uint64{5, 9, 12, 20, 31}, []uint64{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := planByRecord(msgs, c.order, c.applied, c.refused)
			if got := seqs(p.order); !reflect.DeepEqual(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
			if got := seqs(p.unapplied); !reflect.DeepEqual(got, c.not) {
				t.Errorf("unapplied %v, want %v", got, c.not)
			}
		})
	}
}

// TestPlanByRecordSaysWhyNotApplied: an input that came before its run's
// start was terminated; the others were never applied.
func TestPlanByRecordSaysWhyNotApplied(t *testing.T) {
	t.Parallel()
	msgs := history(t, "1:event", "3:start", "4:result", "5:event")
	p := planByRecord(msgs, order(3, 4), []uint64{3, 4}, nil)
	if got := seqs(p.unapplied); !reflect.DeepEqual(got, []uint64{1, 5}) {
		t.Fatalf("unapplied %v", got)
	}
	if !strings.HasPrefix(p.why[1], "terminated by the dispatchers: it came before the run's start (seq 3)") {
		t.Errorf("why 1: %q", p.why[1])
	}
	if !strings.HasPrefix(p.why[5], "never applied") {
		t.Errorf("why 5: %q", p.why[5])
	}
}

func TestPlanByStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		msgs      []string
		want, not []uint64
	}{
		{"in order", []string{"1:start", "2:result", "3:event"}, []uint64{1, 2, 3}, nil},
		{"event before the start is terminated", []string{"1:event", "2:start", "3:result"}, []uint64{2, 3}, []uint64{1}},
		{"no start", []string{"1:event"}, []uint64{1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := planByStream(names, history(t, c.msgs...))
			if got := seqs(p.order); !reflect.DeepEqual(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
			if got := seqs(p.unapplied); !reflect.DeepEqual(got, c.not) {
				t.Errorf("unapplied %v, want %v", got, c.not)
			}
		})
	}
}
