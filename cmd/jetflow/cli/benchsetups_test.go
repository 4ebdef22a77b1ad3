package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/bench"
)

// --rounds repeats the processes setups, interleaved, the later rounds
// measuring only the scenarios the scale targets compare; the other
// setups run once.
func TestBenchRounds(t *testing.T) {
	t.Parallel()
	f := &benchFlags{modes: "single,processes", dispatchers: "1,4", durability: "default,fsync", workers: 1, rounds: 3}
	setups, err := benchSetups(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range setups {
		names = append(names, s.Name()+" "+joinScenarios(s.Scenarios))
	}
	want := []string{
		"single one-task,fan-out,event,loop-10,parked,timers,console-index,large-payload",
		"processes d=1 w=1 #1 one-task,fan-out,event,parked",
		"processes d=4 w=1 #1 one-task,fan-out,event",
		"processes d=1 w=1 #2 one-task,fan-out,event",
		"processes d=4 w=1 #2 one-task,fan-out,event",
		"processes d=1 w=1 #3 one-task,fan-out,event",
		"processes d=4 w=1 #3 one-task,fan-out,event",
		"single fsync one-task",
		"processes d=1 w=1 fsync one-task",
	}
	if !slices.Equal(names, want) {
		t.Errorf("setups\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}

	for _, bad := range []benchFlags{
		{modes: "single", dispatchers: "1", durability: "default", rounds: 2},
		{modes: "processes", dispatchers: "1", durability: "default", rounds: 0},
	} {
		if _, err := benchSetups(&bad); err == nil || !strings.Contains(err.Error(), "--rounds") {
			t.Errorf("%+v: error %v, want one naming --rounds", bad, err)
		}
	}
}

func joinScenarios(scs []bench.Scenario) string {
	out := make([]string, len(scs))
	for i, sc := range scs {
		out[i] = string(sc)
	}
	return strings.Join(out, ",")
}
