package run

import "testing"

// BenchmarkLifecycle is one whole run of a one-task workflow with a
// choice: start, invoke, result, choice, done. The reference needs about
// 330–450 µs for the same lifecycle in process.
func BenchmarkLifecycle(b *testing.B) {
	wf := compile(b, oneTask)
	b.ReportAllocs()
	for b.Loop() {
		st, eff, err := Apply(wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 5.0, Time: 1}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		inv := eff[0].Invoke
		st, _, err = Apply(wf, st, Message{Kind: KindResult, Time: 2, Result: &TaskResult{Activation: inv.Activation, Node: inv.Node, Attempt: 1, Output: 6.0}}, Options{})
		if err != nil || st.Status != StatusDone {
			b.Fatal(err, st.Status)
		}
	}
}

// BenchmarkLifecycleStored adds what a dispatcher does besides: the state
// is encoded after each message and decoded before the next.
func BenchmarkLifecycleStored(b *testing.B) {
	wf := compile(b, oneTask)
	b.ReportAllocs()
	for b.Loop() {
		st, eff, err := Apply(wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 5.0, Time: 1}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		data, err := Encode(st)
		if err != nil {
			b.Fatal(err)
		}
		if st, err = Decode(data); err != nil {
			b.Fatal(err)
		}
		inv := eff[0].Invoke
		st, _, err = Apply(wf, st, Message{Kind: KindResult, Time: 2, Result: &TaskResult{Activation: inv.Activation, Node: inv.Node, Attempt: 1, Output: 6.0}}, Options{})
		if err != nil || st.Status != StatusDone {
			b.Fatal(err)
		}
		if _, err := Encode(st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode compares Encode with encoding/json (encodeReflect) on
// the state a one-task run's start leaves and on fullState.
//
//	go test ./engine/run -run '^$' -bench Encode -benchmem
func BenchmarkEncode(b *testing.B) {
	wf := compile(b, oneTask)
	started, _, err := Apply(wf, nil, Message{Kind: KindStart, RunID: "r1", Input: map[string]any{"sku": "KB-42", "qty": 2.0}, Time: 1}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name string
		st   *State
	}{{"one-task-started", started}, {"full", fullState(map[string]any{"a": []any{1.0, "x"}})}} {
		for _, e := range []struct {
			name   string
			encode func(*State) ([]byte, error)
		}{{"hand", Encode}, {"encoding-json", encodeReflect}} {
			b.Run("state="+s.name+"/encoder="+e.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.encode(s.st); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
