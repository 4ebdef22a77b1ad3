package dag_test

import (
	"fmt"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/value"
)

// A runner drives a compiled DAG by scheduling, invoking the tasks a plan
// names, and scheduling again with their results until the plan is done.
func Example() {
	doc, err := value.Decode([]byte(`{"$dag":"0.1",
		"nodes":{"in":{"kind":"input"},"greet":{"kind":"task","run":"greet","version":"1","with":"$.name"},"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"greet"},{"from":"greet","to":"out"}]}`), value.Limits{})
	if err != nil {
		panic(err)
	}
	d, err := dag.Compile(doc, dag.Options{})
	if err != nil {
		panic(err)
	}
	input := map[string]any{"name": "ada"}
	values := map[string]any{}
	for {
		plan, err := d.Schedule(input, values, nil)
		if err != nil {
			panic(err)
		}
		for _, nv := range plan.Values {
			values[nv.ID] = nv.Value
		}
		if plan.Done {
			fmt.Println("output:", plan.Output)
			return
		}
		for _, inv := range plan.Tasks {
			fmt.Println("invoke", inv.Task, "version", inv.Version, "with", value.MustCanonical(inv.Arg))
			values[inv.Node] = "hello " + inv.Arg["with"].(string)
		}
	}
	// Output:
	// invoke greet version 1 with {"input":{"name":"ada"},"with":"ada"}
	// output: hello ada
}
