package jslt_test

import (
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// TestRunsDoNotCarryOver interleaves transformations of different
// stylesheets and inputs, some failing midway: a recycled run (its
// pre-pass trie, its locations, its hosts) must start empty every time,
// so each answer is the one a fresh run gives.
func TestRunsDoNotCarryOver(t *testing.T) {
	t.Parallel()
	in := benchInput(t)
	sheets := []string{
		benchSheets["vat"], benchSheets["surgical"], benchSheets["modes"], benchSheets["dispatch"], benchSheets["flwor"],
		`[{"match":"$..name","body":"$path"}]`,
		`[{"match":"$.events[1].error","body":{"$div":["$",0]}}]`,                   // fails at the first match
		`{"$jslt":"0.1","unmatched":"error","rules":[{"match":"$.meta","body":1}]}`, // fails at the root
	}
	compiled := make([]*jslt.Stylesheet, len(sheets))
	want := make([]any, len(sheets))
	wantCode := make([]fault.Code, len(sheets))
	for i, src := range sheets {
		s, err := jslt.Compile(decode(t, src))
		if err != nil {
			t.Fatal(err)
		}
		compiled[i] = s
		want[i], _, err = s.Transform(nil, in, nil)
		wantCode[i] = fault.CodeOf(err)
	}
	if wantCode[6] != fault.JT2004 || wantCode[7] != fault.JT2003 {
		t.Fatalf("the failing sheets gave %v and %v, want JT2004 and JT2003", wantCode[6], wantCode[7])
	}
	small := decode(t, `{"meta":{"version":41},"people":[{"name":"x","age":20}]}`)
	for round := range 20 {
		for j := range sheets {
			i := (j + round) % len(sheets)
			got, _, err := compiled[i].Transform(nil, in, nil)
			if fault.CodeOf(err) != wantCode[i] || !value.Equal(got, want[i]) {
				t.Fatalf("round %d, sheet %d: got %s (%v), want %s (%v)", round, i,
					value.Stringify(got), err, value.Stringify(want[i]), wantCode[i])
			}
		}
		// a small input after large ones sees no entry of theirs
		got, _, err := compiled[1].Transform(nil, small, nil)
		if err != nil || !value.Equal(got, decode(t, `{"meta":{"version":42},"people":[{"name":"x","age":20}]}`)) {
			t.Fatalf("round %d: small input gave %s (%v)", round, value.Stringify(got), err)
		}
	}
}

// TestTransformAllocations holds the transformations of
// BenchmarkTransform to the allocations they make: what they answer,
// and little besides (the run and its slabs are recycled). Before runs
// were recycled, surgical made 24 and dispatch 97.
func TestTransformAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	in := benchInput(t)
	for _, c := range []struct {
		name   string
		allocs float64
	}{
		// the budget; a copy of the root and of meta (two each); the sum
		{"surgical", 6},
		// the budget; the result lists; 20 maps of the 30 events (two
		// each: the other ten are the shared literal); the walk's lists
		// are lent
		{"dispatch", 45},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := jslt.Compile(decode(t, benchSheets[c.name]))
			if err != nil {
				t.Fatal(err)
			}
			n := testing.AllocsPerRun(50, func() {
				if _, _, err := s.Transform(&query.Budget{}, in, nil); err != nil {
					t.Fatal(err)
				}
			})
			if n > c.allocs {
				t.Errorf("%v allocations per transformation, want at most %v", n, c.allocs)
			}
		})
	}
}
