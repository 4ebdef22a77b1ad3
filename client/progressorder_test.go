package client

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/workflow"
)

// TestOrderEnteredWithoutWorkflow falls back to declaration-free order:
// states are still all reported.
func TestOrderEnteredWithoutWorkflow(t *testing.T) {
	t.Parallel()
	got := orderEntered(nil, []string{"/states/a"}, map[string]int{"/states/c": 1, "/states/b": 1})
	if strings.Join(got, " ") != "/states/b /states/c" {
		t.Errorf("got %v", got)
	}
}

// TestOrderEnteredThroughAFlowInOneStep: a flow entered and left in one
// step reports its own states before where it leads, and a flow nested
// in it likewise.
func TestOrderEnteredThroughAFlowInOneStep(t *testing.T) {
	t.Parallel()
	doc := `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"on":[{"event":"go","to":"f"}]},
	 "f":{"flow":{"initial":"c","states":{
	   "c":{"choose":[{"guard":true,"to":"g"}],"otherwise":"end"},
	   "g":{"flow":{"initial":"gc","states":{
	     "gc":{"choose":[{"guard":true,"to":"gend"}],"otherwise":"gend"},
	     "gend":{"final":true}}},"then":"end"},
	   "end":{"final":true}}},"then":"z"},
	 "z":{"final":true}}}`
	wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	visits := map[string]int{}
	for _, id := range []string{"f", "f/flow/states/c", "f/flow/states/g", "f/flow/states/g/flow/states/gc", "f/flow/states/g/flow/states/gend", "f/flow/states/end", "z"} {
		visits["/states/"+id] = 1
	}
	got := orderEntered(wf, []string{"/states/a"}, visits)
	want := []string{
		"/states/f", "/states/f/flow/states/c", "/states/f/flow/states/g",
		"/states/f/flow/states/g/flow/states/gc", "/states/f/flow/states/g/flow/states/gend",
		"/states/f/flow/states/end", "/states/z",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entered in the order\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
