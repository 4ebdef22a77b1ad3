package sim

import (
	"testing"

	"github.com/jetflow/jetflow/engine/simtest"
)

// TestCorpus runs every simulation case of the conformance corpus and
// compares it with the reference's answer.
func TestCorpus(t *testing.T) {
	t.Parallel()
	cases := simtest.Cases(t)
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d simulation cases, want at least 60", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			got, err := RunJSON(c.Scenario)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			simtest.Compare(t, c, []byte(got))
		})
	}
}
