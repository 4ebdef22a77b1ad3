package dispatcher

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestOrderAdd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		seqs []uint64
		want Order
	}{
		{"in stream order", []uint64{3, 7, 9}, Order{{3, 9}}},
		{"input before the start", []uint64{5, 2, 8, 9}, Order{{5, 5}, {2, 2}, {8, 9}}},
		{"late input cut out of its span", []uint64{1, 4, 9, 6, 12}, Order{{1, 5}, {7, 9}, {6, 6}, {12, 12}}},
		{"late at a span's start", []uint64{1, 4, 9, 2}, Order{{1, 1}, {3, 9}, {2, 2}}},
		{"late at a span's end", []uint64{1, 4, 9, 8}, Order{{1, 7}, {9, 9}, {8, 8}}},
		{"two late", []uint64{1, 9, 4, 3}, Order{{1, 2}, {5, 9}, {4, 4}, {3, 3}}},
		{"in order after late ones", []uint64{1, 9, 4, 10, 11}, Order{{1, 3}, {5, 9}, {4, 4}, {10, 11}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var rec *Record
			for _, s := range c.seqs {
				prev := rec
				var before Order
				if prev != nil {
					before = append(Order(nil), prev.Order...)
				}
				rec = rec.next(s, 128)
				if prev != nil && !reflect.DeepEqual(prev.Order, before) {
					t.Fatalf("next changed the previous record's order: %v, was %v", prev.Order, before)
				}
			}
			if !reflect.DeepEqual(rec.Order, c.want) {
				t.Errorf("order after %v = %v, want %v", c.seqs, rec.Order, c.want)
			}
		})
	}
}

func TestOrderJSON(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(Order{{1, 5}, {7, 7}})
	if err != nil || string(data) != "[[1,5],[7,7]]" {
		t.Fatalf("marshal = %s, %v", data, err)
	}
	var o Order
	if err := json.Unmarshal(data, &o); err != nil || !reflect.DeepEqual(o, Order{{1, 5}, {7, 7}}) {
		t.Fatalf("unmarshal = %v, %v", o, err)
	}
	for _, bad := range []string{`[[5,1]]`, `[[1]]`, `[1,2]`, `[["a","b"]]`} {
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
}

// TestReplayerSteps drives the replayer over the fake reducer through
// every outcome.
func TestReplayerSteps(t *testing.T) {
	t.Parallel()
	cfg := Config{RejectedHistory: 2}.WithDefaults()
	r := &Replayer{cfg: cfg, loader: &fakeLoader{prog: &fakeProgram{}}}
	names := cfg.Names
	at := time.UnixMilli(1_000_000)
	in := func(seq uint64, subject, data string) Input {
		return Input{Subject: subject, Data: []byte(data), Seq: seq, Time: at.Add(time.Duration(seq) * time.Second), Header: nats.Header{}}
	}
	ctx := context.Background()
	steps := []struct {
		in      Input
		outcome Outcome
	}{
		{in(1, names.Event("r", "x"), `1`), NoRun},
		{in(2, names.Start("r"), `{"workflow":"fake","input":{"events":2}}`), Applied},
		{in(3, names.Start("r"), `{"workflow":"fake"}`), Rejected},
		{in(4, names.Event("r", "x"), `"a"`), Applied},
		// Malformed, but addressed to a run that exists: refused on it.
		{in(5, names.Result("r"), `[]`), Rejected},
		{in(4, names.Event("r", "x"), `"a"`), Duplicate},
		{in(6, names.Event("r", "x"), `"b"`), Applied},
		{in(7, names.Cancel("r"), `{}`), Rejected},
	}
	var cur Replayed
	for i, s := range steps {
		next, outcome, why, err := r.Step(ctx, cur, s.in, "")
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if outcome != s.outcome {
			t.Fatalf("step %d (%s): outcome %s (%s), want %s", i, s.in.Subject, outcome, why, s.outcome)
		}
		cur = next
	}
	// Applied lists what was applied; refusals are in Rejected.
	if got := cur.Record.Applied; !reflect.DeepEqual(got, []uint64{2, 4, 6}) {
		t.Errorf("applied %v", got)
	}
	if got := cur.Record.Order; !reflect.DeepEqual(got, Order{{2, 7}}) {
		t.Errorf("order %v", got)
	}
	if n := len(cur.Record.Rejected); n != 2 || cur.Record.Rejected[0].Seq != 5 || cur.Record.Rejected[1].Seq != 7 {
		t.Errorf("rejected %+v", cur.Record.Rejected)
	}
	if cur.State.Status != "done" || cur.Record.Status == nil || cur.Record.Status.Status != "done" {
		t.Errorf("state %s, status %+v", cur.State.Status, cur.Record.Status)
	}
	// The stream time of the late input is clamped as a dispatcher does.
	late := in(8, names.Event("q", "x"), `1`)
	q, _, _, err := r.Step(ctx, Replayed{}, in(9, names.Start("q"), `{"workflow":"fake","input":{"events":1}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	q, outcome, _, err := r.Step(ctx, q, late, "")
	if err != nil || outcome != Applied || q.State.Control.Time != float64(at.Add(9*time.Second).UnixMilli()) {
		t.Errorf("late input: %v %s, time %v", err, outcome, q.State.Control.Time)
	}
	if _, _, _, err := r.Step(ctx, Replayed{}, in(10, names.Start("u"), `{"workflow":"nope"}`), ""); err == nil {
		t.Error("a start of an undeployed workflow replayed without error")
	}
	big := in(11, names.Event("r", "x"), `"`+string(make([]byte, cfg.MaxInputBytes))+`"`)
	if _, outcome, _, _ := r.Step(ctx, cur, big, ""); outcome != Rejected {
		t.Errorf("oversized input of a run: %s, want it refused on the run", outcome)
	}
	if _, outcome, _, _ := r.Step(ctx, Replayed{}, big, ""); outcome != Malformed {
		t.Errorf("oversized input of no run: %s", outcome)
	}
}
