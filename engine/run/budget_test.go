package run

import (
	"strings"
	"testing"
)

// slow is a guard of 90,603 steps that reads false.
const slow = `{"$some":{"a":{"$range":[1,300]},"b":{"$range":[1,300]}},"$satisfies":false}`

// hungry creates 10 strings of 64 KiB, about 1.3 MB in the account.
const hungry = `{"$gt":[{"$count":{"$for":{"i":{"$range":[1,10]}},"$return":{"$fold":{"acc":"ab"},"$for":{"x":{"$range":[1,15]}},"$return":{"$concat":["$acc","$acc"]}}}},0]}`

// TestStepBudget checks that the queries of one message share one
// budget, wherever they are, and that a run over it fails as a run whose
// one query is over its own limit does: JF2016 (or the DAG's JF2006) at
// the path of the query that crossed it, citing the JQ2009.
func TestStepBudget(t *testing.T) {
	t.Parallel()
	guards := func(n int) string {
		return strings.TrimSuffix(strings.Repeat(`{"guard":`+slow+`,"to":"yes"},`, n), ",")
	}
	cases := []struct {
		name, doc  string
		opts       Options
		code, path string
		says       string
	}{
		{
			"one guard alone", `{"$workflow":"0.2","revision":"r","initial":"c","states":{
			"c":{"choose":[` + guards(1) + `],"otherwise":"no"},"yes":{"final":true},"no":{"final":true}}}`,
			Options{Steps: 50000},
			"JF2016", "/transitions/0/guard", "step budget (50000",
		},
		{
			"guards of one choice", `{"$workflow":"0.2","revision":"r","initial":"c","states":{
			"c":{"choose":[` + guards(3) + `],"otherwise":"no"},"yes":{"final":true},"no":{"final":true}}}`,
			Options{Steps: 200000},
			"JF2016", "/transitions/2/guard", "step budget (200000",
		},
		{
			"choices in a row", `{"$workflow":"0.2","revision":"r","initial":"c1","states":{
			"c1":{"choose":[{"guard":{"$not":` + slow + `},"to":"c2"}],"otherwise":"no"},
			"c2":{"choose":[{"guard":{"$not":` + slow + `},"to":"c3"}],"otherwise":"no"},
			"c3":{"choose":[{"guard":{"$not":` + slow + `},"to":"yes"}],"otherwise":"no"},
			"yes":{"final":true},"no":{"final":true}}}`,
			Options{Steps: 200000},
			"JF2016", "/transitions/4/guard", "step budget (200000",
		},
		{
			"choices in a nested flow", `{"$workflow":"0.2","revision":"r","initial":"f","states":{
			"f":{"flow":{"initial":"c1","states":{
				"c1":{"choose":[{"guard":{"$not":` + slow + `},"to":"c2"}],"otherwise":"end"},
				"c2":{"choose":[{"guard":{"$not":` + slow + `},"to":"c3"}],"otherwise":"end"},
				"c3":{"choose":[{"guard":{"$not":` + slow + `},"to":"end"}],"otherwise":"end"},
				"end":{"final":true}}},"then":"yes"},
			"yes":{"final":true}}}`,
			Options{Steps: 200000},
			"JF2016", "/transitions/4/guard", "step budget (200000",
		},
		{
			"a work input after a guard", `{"$workflow":"0.2","revision":"r","initial":"c","states":{
			"c":{"choose":[{"guard":{"$not":` + slow + `},"to":"w"}],"otherwise":"no"},
			"w":{"work":{"task":"t","version":"1"},"input":{"$not":` + slow + `},"then":"yes"},
			"yes":{"final":true},"no":{"final":true}}}`,
			Options{Steps: 150000},
			"JF2016", "/states/w/input", "",
		}, // the reference's message drops the cause
		{
			"a DAG query after a work input", `{"$workflow":"0.2","revision":"r","initial":"w","states":{
			"w":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},"q":{"kind":"query","query":` + slow + `},"out":{"kind":"output"}},
				"edges":[{"from":"in","to":"q"},{"from":"q","to":"out"}]}},"input":{"$not":` + slow + `},"then":"yes"},
			"yes":{"final":true}}}`,
			Options{Steps: 150000},
			"JF2006", "/nodes/q", "step budget (150000",
		},
		{
			"a task's with after a guard", `{"$workflow":"0.2","revision":"r","initial":"c","states":{
			"c":{"choose":[{"guard":{"$not":` + slow + `},"to":"w"}],"otherwise":"no"},
			"w":{"work":{"task":"t","version":"1","with":` + slow + `},"then":"yes"},
			"yes":{"final":true},"no":{"final":true}}}`,
			Options{Steps: 150000},
			"JF2006", "/nodes/task", "step budget (150000",
		},
		{
			"bytes of two guards", `{"$workflow":"0.2","revision":"r","initial":"c","states":{
			"c":{"choose":[{"guard":` + hungry + `,"to":"d"}],"otherwise":"no"},
			"d":{"choose":[{"guard":` + hungry + `,"to":"yes"}],"otherwise":"no"},
			"yes":{"final":true},"no":{"final":true}}}`,
			Options{Bytes: 2 << 20},
			"JF2016", "/transitions/2/guard", "byte budget (2097152",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wf := compile(t, c.doc)
			st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1}, c.opts)
			f := st.Error
			if st.Status != StatusFailed || f.Code != c.code || f.Path != c.path ||
				c.says != "" && !strings.Contains(f.Message, "JQ2009: the query exceeded the "+c.says) {
				t.Fatalf("want failed with %s at %s citing %q, got %s %+v", c.code, c.path, c.says, st.Status, f)
			}
			if s := only(t, eff, settledOf); s.Status != StatusFailed || s.Error != f {
				t.Fatalf("settled %+v", s)
			}
			// The default budget, ten million steps and 64 MiB, is ample.
			st, _ = step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1}, Options{})
			if st.Status == StatusFailed {
				t.Fatalf("with the default budget: %+v", st.Error)
			}
		})
	}
}

// TestStepBudgetPerMessage: each message has a budget of its own, so a
// run may spend more than one budget over its life.
func TestStepBudgetPerMessage(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r","initial":"c","states":{
		"c":{"choose":[{"guard":{"$not":`+slow+`},"to":"w"}],"otherwise":"no"},
		"w":{"work":{"task":"t","version":"1"},"then":"d"},
		"d":{"choose":[{"guard":{"$not":`+slow+`},"to":"yes"}],"otherwise":"no"},
		"yes":{"final":true},"no":{"final":true}}}`)
	opts := Options{Steps: 100000}
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1}, opts)
	st, _ = step(t, wf, st, answer(only(t, eff, invokeOf), ok(1.0)), opts)
	if st.Status != StatusDone || st.Control.Active[0] != "/states/yes" {
		t.Fatalf("%s at %v: %+v", st.Status, st.Control.Active, st.Error)
	}
}
