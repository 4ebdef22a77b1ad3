package integration

import (
	"testing"
	"time"

	"github.com/jetflow/jetflow/wire"
)

// TestChildInputIsWith: a DAG node bound to a workflow starts its child
// with the node's resolved `with`, as a worker's handler gets it: the
// child "one" doubles the number the `with` picks out of the input.
func TestChildInputIsWith(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.deployWith(t, "withkid", `{"$workflow":"0.2","revision":"withkid/1","initial":"a","states":{
		"a":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},
			"c":{"kind":"task","run":"pick","version":"1","with":"$.order.qty"},"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"c"},{"from":"c","to":"out"}]}},"then":"done"},
		"done":{"final":true}}}`, `{"$children":{"pick@1":{"workflow":"one"}}}`)
	e.start(t, "withkid", "wk", map[string]any{"order": map[string]any{"qty": 21}, "customer": "ada"})
	st := e.wait(t, "wk", 2*time.Minute)
	if st.Status != wire.StatusDone || string(st.Result) != "42" {
		t.Fatalf("parent: %+v, want done with 42 (its child doubled the with, 21)", st)
	}
	checkReplay(t, e, "wk")
}
