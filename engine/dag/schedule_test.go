package dag_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

const fanout3 = `{"$dag":"0.1","nodes":{
	"in":{"kind":"input"},
	"price":{"kind":"task","run":"price","version":"1","with":{"sku":"$.sku"}},
	"stock":{"kind":"task","run":"stock","version":"1"},
	"ship":{"kind":"task","run":"ship","version":"1"},
	"k":{"kind":"const","value":{"currency":"EUR"},"checkpoint":true},
	"out":{"kind":"output","checkpoint":true}},
	"edges":[{"from":"in","to":"price"},{"from":"in","to":"stock","select":"$.sku"},{"from":"in","to":"ship"},
	{"from":"price","to":"out","port":"price"},{"from":"stock","to":"out","port":"stock"},
	{"from":"ship","to":"out","port":"ship"},{"from":"k","to":"out","port":"meta"}]}`

func compileT(t testing.TB, doc string) *dag.DAG {
	t.Helper()
	d, err := dag.Compile(mustDecode(t, doc), dag.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestScheduleFanout(t *testing.T) {
	t.Parallel()
	d := compileT(t, fanout3)
	input := map[string]any{"sku": "A-1"}
	values := map[string]any{}
	plan, err := d.Schedule(input, values, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(values) != 0 {
		t.Fatal("Schedule modified the caller's values")
	}
	if got := fmt.Sprint(nodeIDs(plan.Values)); got != "[in k]" {
		t.Errorf("inline values %s, want [in k]", got)
	}
	var tasks []string
	for _, inv := range plan.Tasks {
		tasks = append(tasks, inv.Node)
	}
	// edge order from the output decides who is asked first
	if got := fmt.Sprint(tasks); got != "[price stock ship]" {
		t.Errorf("tasks %s", got)
	}
	wantArgs := map[string]string{
		"price": `{"input":{"sku":"A-1"},"with":{"sku":"A-1"}}`,
		"stock": `{"input":"A-1","with":null}`,
		"ship":  `{"input":{"sku":"A-1"},"with":null}`,
	}
	for _, inv := range plan.Tasks {
		if got := value.MustCanonical(inv.Arg); got != wantArgs[inv.Node] || inv.Version != "1" {
			t.Errorf("%s: arg %s version %q, want %s", inv.Node, got, inv.Version, wantArgs[inv.Node])
		}
	}
	for _, nv := range plan.Values {
		values[nv.ID] = nv.Value
	}
	running := map[string]bool{"price": true, "stock": true, "ship": true}
	again, err := d.Schedule(input, values, running)
	if err != nil || len(again.Tasks) != 0 || len(again.Values) != 0 || again.Done {
		t.Fatalf("running tasks were scheduled again: %+v %v", again, err)
	}
	values["price"], values["stock"] = 10.0, true
	delete(running, "price")
	delete(running, "stock")
	partial, err := d.Schedule(input, values, running)
	if err != nil || partial.Done || len(partial.Values) != 0 {
		t.Fatalf("output computed before its last port: %+v %v", partial, err)
	}
	values["ship"] = "2d"
	delete(running, "ship")
	done, err := d.Schedule(input, values, running)
	if err != nil || !done.Done {
		t.Fatalf("not done: %+v %v", done, err)
	}
	want := `{"meta":{"currency":"EUR"},"price":10,"ship":"2d","stock":true}`
	if got := value.MustCanonical(done.Output); got != want {
		t.Errorf("output %s, want %s", got, want)
	}
	if len(done.Values) != 1 || done.Values[0].ID != "out" || !done.Values[0].Checkpoint {
		t.Errorf("final values %+v, want the checkpointed output", done.Values)
	}
}

func nodeIDs(vs []dag.NodeValue) []string {
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = v.ID
	}
	return ids
}

func TestScheduleWaitsForEveryNode(t *testing.T) {
	t.Parallel()
	// the output is known at once, but the run settles only when the
	// dangling task did, as the reference's does
	d := compileT(t, `{"$dag":"0.1","nodes":{"in":{"kind":"input"},"side":{"kind":"task","run":"x"},"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"side"},{"from":"in","to":"out"}]}`)
	plan, err := d.Schedule(7.0, nil, nil)
	if err != nil || plan.Done || len(plan.Tasks) != 1 {
		t.Fatalf("plan %+v, err %v", plan, err)
	}
	values := map[string]any{"side": nil}
	for _, nv := range plan.Values {
		values[nv.ID] = nv.Value
	}
	plan, err = d.Schedule(7.0, values, nil)
	if err != nil || !plan.Done || plan.Output != 7.0 {
		t.Fatalf("plan %+v, err %v", plan, err)
	}
}

func TestRestoreAndResume(t *testing.T) {
	t.Parallel()
	d := compileT(t, `{"$dag":"0.1","nodes":{"in":{"kind":"input"},
		"a":{"kind":"task","run":"x","version":"1"},
		"b":{"kind":"task","run":"x","version":"1","checkpoint":true},
		"out":{"kind":"output","checkpoint":true}},
		"edges":[{"from":"in","to":"a"},{"from":"a","to":"b"},{"from":"b","to":"out"}]}`)
	seeded := d.Restore(map[string]any{"a": "dropped", "b": "kept", "ghost": 1.0})
	if len(seeded) != 1 || seeded["b"] != "kept" {
		t.Fatalf("Restore = %v, want only the checkpointed b", seeded)
	}
	plan, err := d.Schedule(nil, seeded, nil)
	if err != nil {
		t.Fatal(err)
	}
	// a is recomputed although b is restored; out follows b at once
	if len(plan.Tasks) != 1 || plan.Tasks[0].Node != "a" || len(plan.Values) != 2 || plan.Values[1].ID != "out" {
		t.Errorf("plan %+v", plan)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	d := compileT(t, `{"$dag":"0.1","nodes":{"in":{"kind":"input"},"a/b":{"kind":"task","run":"x"},
		"q":{"kind":"query","query":{"$add":["$",1]}},"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"a/b"},{"from":"a/b","to":"q"},{"from":"q","to":"out"}]}`)
	err := d.TaskFailed("a/b", "HTTP 503")
	if err.Error() != "JF2006: node 'a/b' failed: HTTP 503 at /nodes/a~1b" || err.NodeID != "a/b" {
		t.Errorf("TaskFailed = %v (node %q)", err, err.NodeID)
	}
	_, qerr := d.Schedule(nil, map[string]any{"in": nil, "a/b": "text"}, nil)
	var fe *fault.Error
	if !errors.As(qerr, &fe) || fe.Code != fault.JF2006 || fe.NodeID != "q" || fe.Path != "/nodes/q" || fault.CodeOf(fe.Cause) != fault.JQ2001 {
		t.Errorf("query failure = %#v", qerr)
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	doc := mustDecode(t, `{"$dag":"0.1","nodes":{"in":{"kind":"input"},"t":{"kind":"task","run":"x","version":"7"},"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"t"},{"from":"t","to":"out"}]}`)
	d, err := dag.Compile(doc, dag.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := d.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if want := value.HashContent(value.MustCanonical(doc)); rev != want {
		t.Errorf("default revision %q, want %q", rev, want)
	}
	d2, err := dag.Compile(doc, dag.Options{Revision: "enrich/3"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := d2.Identity(map[string]any{"b": 1.0, "a": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"document":` + value.MustCanonical(value.MustCanonical(doc)) +
		`,"input":"{\"a\":2,\"b\":1}","revision":"enrich/3","taskVersions":{"t":"7"}}`
	if got := value.MustCanonical(id); got != want {
		t.Errorf("identity\n got %s\nwant %s", got, want)
	}
}

func BenchmarkScheduleFanout3(b *testing.B) {
	d := compileT(b, fanout3)
	input := map[string]any{"sku": "A-1"}
	first, err := d.Schedule(input, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	done := map[string]any{"price": 10.0, "stock": true, "ship": "2d"}
	for _, nv := range first.Values {
		done[nv.ID] = nv.Value
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Schedule(input, nil, nil); err != nil {
			b.Fatal(err)
		}
		if p, err := d.Schedule(input, done, nil); err != nil || !p.Done {
			b.Fatal(p, err)
		}
	}
}

// A query node may leave the reference's empty marker in what it builds:
// a checkpoint holding it is JF2008 at the node with the marker's
// pointer, and nothing that leaves Schedule holds it.
func TestScheduleEmptyMarker(t *testing.T) {
	t.Parallel()
	const marker = `{"$date-diff":["2026-01-01","$.missing","day"]}`
	t.Run("checkpoint refuses it", func(t *testing.T) {
		t.Parallel()
		d := compileT(t, `{"$dag":"0.1","nodes":{"i":{"kind":"input"},
			"q":{"kind":"query","query":{"a":[1,`+marker+`]},"checkpoint":true},"o":{"kind":"output"}},
			"edges":[{"from":"i","to":"q"},{"from":"q","to":"o"}]}`)
		_, err := d.Schedule(map[string]any{}, map[string]any{}, nil)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.JF2008 || fe.Path != "/nodes/q" || fe.NodeID != "q" {
			t.Fatalf("got %v, want JF2008 at /nodes/q", err)
		}
		want := "JF2008: node 'q' declared checkpoint but produced a value that is not JSON-serializable: a symbol is not a JSON value at /a/1 at /nodes/q"
		if fe.Error() != want {
			t.Errorf("message\n got %s\nwant %s", fe.Error(), want)
		}
	})
	t.Run("what leaves is unmarked", func(t *testing.T) {
		t.Parallel()
		d := compileT(t, `{"$dag":"0.1","nodes":{"i":{"kind":"input"},
			"q":{"kind":"query","query":{"a":`+marker+`,"b":[`+marker+`]}},
			"p":{"kind":"query","query":[{"$is-null":"$.x.b[0]"},{"$eq":["$.x.b",[null]]},{"$count":"$.x.a"}]},
			"t":{"kind":"task","run":"t","version":"1"},"o":{"kind":"output"}},
			"edges":[{"from":"i","to":"q"},{"from":"q","to":"p","port":"x"},{"from":"q","to":"t"},
			{"from":"q","to":"o","port":"q"},{"from":"p","to":"o","port":"p"},{"from":"t","to":"o","port":"t"}]}`)
		plan, err := d.Schedule(map[string]any{}, map[string]any{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, v := range plan.Values {
			got[v.ID] = mustText(t, v.Value)
		}
		// p read the marker in the same call as the reference does: as
		// the empty sequence, which is not null and counts no item, in
		// an array that is not [null]
		if got["q"] != `{"b":[null]}` || got["p"] != `[false,false,0]` {
			t.Errorf("values %v", got)
		}
		if len(plan.Tasks) != 1 || mustText(t, plan.Tasks[0].Arg["input"]) != `{"b":[null]}` {
			t.Errorf("task argument %v", plan.Tasks)
		}
		values := map[string]any{"t": 1.0}
		for _, v := range plan.Values {
			values[v.ID] = v.Value
		}
		plan, err = d.Schedule(map[string]any{}, values, nil)
		if err != nil || !plan.Done {
			t.Fatalf("second call: %v, done %v", err, plan.Done)
		}
		if s := mustText(t, plan.Output); s != `{"p":[false,false,0],"q":{"b":[null]},"t":1}` {
			t.Errorf("output %s", s)
		}
	})
}

func mustText(t *testing.T, v any) string {
	t.Helper()
	s, err := value.Canonical(v)
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return s
}

// A result that fails as it is read fails one turn after its handler is
// called: before a failing query two inline nodes down another branch,
// after one that reads the input itself.
func TestWaveFailsAtRead(t *testing.T) {
	t.Parallel()
	refused := fault.New(fault.JF2008, "refused", "/nodes/a")
	failsAtRead := func(inv dag.Invocation) error {
		if inv.Node == "a" {
			return refused
		}
		return nil
	}
	for _, tc := range []struct {
		name, chain string
		wave        dag.Wave
		want        fault.Code
	}{
		{"chain read first", `{"from":"in","to":"c"},{"from":"c","to":"z"}`, dag.Wave{FailsAtRead: failsAtRead}, fault.JF2008},
		{"chain without reads", `{"from":"in","to":"c"},{"from":"c","to":"z"}`, dag.Wave{}, fault.JF2006},
		{"query beside it first", `{"from":"in","to":"z"},{"from":"in","to":"c"}`, dag.Wave{FailsAtRead: failsAtRead}, fault.JF2006},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := compileT(t, `{"$dag":"0.1","nodes":{"in":{"kind":"input"},
				"a":{"kind":"task","run":"a","version":"1","checkpoint":true},
				"c":{"kind":"query","query":"$"},"z":{"kind":"query","query":{"$add":["$.n","x"]}},
				"out":{"kind":"output"}},"edges":[{"from":"in","to":"a"},`+tc.chain+`,
				{"from":"a","to":"out","port":"a"},{"from":"z","to":"out","port":"z"}]}`)
			plan, err := d.ScheduleWave(nil, map[string]any{"n": 1.0}, nil, nil, nil, tc.wave)
			if got := fault.CodeOf(err); got != tc.want {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
			if len(plan.Tasks) != 1 || plan.Tasks[0].Node != "a" {
				t.Errorf("tasks %v, want a's invocation", plan.Tasks)
			}
		})
	}
}
