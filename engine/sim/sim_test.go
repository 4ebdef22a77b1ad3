package sim

import (
	"testing"

	"github.com/jetflow/jetflow/engine/simtest"
)

// TestCorpus runs every simulation case of the conformance corpus and
// compares it with the reference's answer: once with the run's state in
// memory between inputs, and once read back from its encoding before
// each input, as the fleet reads its run record.
func TestCorpus(t *testing.T) {
	t.Parallel()
	cases := simtest.Cases(t)
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d simulation cases, want at least 60", len(cases))
	}
	for _, c := range cases {
		for _, stored := range []bool{false, true} {
			name := c.Name
			if stored {
				name += "/stored"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, err := runJSON(c.Scenario, runOptions{stored: stored})
				if err != nil {
					t.Fatalf("%s: %v", c, err)
				}
				simtest.Compare(t, c, []byte(got))
			})
		}
	}
}
