package authoring

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/workflow"
)

// orderDoc is valid; each case breaks one thing in it.
const orderDoc = `{
  "$workflow": "0.2",
  "revision": "r1",
  "initial": "pay",
  "states": {
    "pay": {
      "work": {"task": "charge", "version": "1"},
      "then": "decide"
    },
    "decide": {
      "choose": [{"guard": {"$gt": ["$.context.data.amount", 2]}, "to": "done"}],
      "otherwise": "wait"
    },
    "wait": {
      "on": [{"event": "payment", "to": "done"}],
      "after": {"ms": 1000, "to": "done"}
    },
    "done": {"final": true}
  }
}`

// payWork is the pointer to the pay state's work member.
const payWork = "/states/pay/work"

// diagnoseCases are the authoring errors a person meets most, with the
// text validate prints and the reference's code and path, unchanged.
var diagnoseCases = []struct {
	name, old, new string
	want           string
	code, path     string
}{
	{
		"undeclared target", `"then": "decide"`, `"then": "decidee"`,
		"order.json:8:7: JF0021 /states/pay/then: undeclared state 'decidee' (did you mean 'decide'?) (states in this scope: decide, done, pay, wait) [reference path /states]",
		"JF0021", "/states",
	},
	{
		"missing then", `,
      "then": "decide"`, ``,
		"order.json:6:5: JF0021 /states/pay/then: missing 'then': name the state to go to (states in this scope: decide, done, pay, wait) [reference path /states]",
		"JF0021", "/states",
	},
	{
		"target not a string", `"otherwise": "wait"`, `"otherwise": 7`,
		"order.json:12:7: JF0021 /states/decide/otherwise: 'otherwise' must name a state, not 7 (states in this scope: decide, done, pay, wait) [reference path /states]",
		"JF0021", "/states",
	},
	{
		"undeclared wait target", `"event": "payment", "to": "done"`, `"event": "payment", "to": "dne"`,
		"order.json:15:35: JF0021 /states/wait/on/0/to: undeclared state 'dne' (did you mean 'done'?) (states in this scope: decide, done, pay, wait) [reference path /states]",
		"JF0021", "/states",
	},
	{
		"misspelled operator", `"$gt": [`, `"$gtx": [`,
		"order.json:11:29: JF0007 /states/decide/choose/0/guard/$gtx: statechart guard failed to compile: JQ0002 unknown operator '$gtx' (did you mean '$gt'?) [reference path /transitions/0/guard]",
		"JF0007", "/transitions/0/guard",
	},
	{
		"misspelled form", `"work": {"task"`, `"wrk": {"task"`,
		"order.json:7:7: JF0021 /states/pay/wrk: a state declares exactly one of work, choose, on, flow or final:true: unknown member 'wrk' (did you mean 'work'?) (allowed here: work, input, then, catch, limit, choose, otherwise, on, after, flow, final) [reference path /states/pay]",
		"JF0021", "/states/pay",
	},
	{
		"misspelled member", `"then": "decide"`, `"then": "decide", "thenn": "x"`,
		"order.json:8:25: JF0021 /states/pay/thenn: unexpected 'thenn' on work state (did you mean 'then'?) (allowed here: work, input, then, catch, limit)",
		"JF0021", "/states/pay/thenn",
	},
	{
		"misspelled task member", `"version": "1"`, `"versio": "1"`,
		"order.json:7:34: JF0021 " + payWork + "/versio: a task needs a nonblank task name and version: unknown member 'versio' (did you mean 'version'?) (allowed here: task, version, with) [reference path " + payWork + "]",
		"JF0021", payWork,
	},
	{
		"misspelled branch member", `"event": "payment", "to": "done"`, `"event": "payment", "too": "done"`,
		"order.json:15:35: JF0021 /states/wait/on/0/too: a wait branch is {event,to,guard?}: unknown member 'too' (did you mean 'to'?) (allowed here: event, to, guard) [reference path /states/wait/on/0]",
		"JF0021", "/states/wait/on/0",
	},
	{
		"misspelled top-level member", `"initial": "pay"`, `"initial": "pay", "stats": {}`,
		"order.json:4:21: JF0021 /stats: unknown workflow member (did you mean 'states'?) (allowed here: $workflow, revision, initial, states)",
		"JF0021", "/stats",
	},
	{
		"no revision", `"revision": "r1",`, ``,
		`order.json:1:1: JF0021 '': a workflow requires "$workflow": "0.2" and a nonblank revision (a workflow needs "$workflow": "0.2", a nonblank "revision", "initial" and "states")`,
		"JF0021", "",
	},
	{
		"DAG edge to an undeclared node", `"work": {"task": "charge", "version": "1"}`,
		`"work": {"dag": {"$dag": "0.1", "nodes": {"in": {"kind": "input"}, "out": {"kind": "output"}}, "edges": [{"from": "in", "to": "ot"}]}}`,
		"order.json:7:127: JF0013 " + payWork + "/dag/edges/0/to: edge 0 enters the undeclared node 'ot' (did you mean 'out'?) (nodes of this DAG: in, out) [reference path /edges/0/to]",
		"JF0013", "/edges/0/to",
	},
	{
		"task shorthand in the lowered DAG", `"version": "1"`, `"version": "1", "with": {"$nope": 1}`,
		"order.json:7:59: JF0014 " + payWork + "/with/$nope: the embedded document failed to compile: JQ0002: unknown operator '$nope' (did you mean '$some'?) at '' [reference path /nodes/task/with]",
		"JF0014", "/nodes/task/with",
	},
	{
		"misspelled initial", `"initial": "pay"`, `"initial": "py"`,
		"order.json:4:3: JF0021 /initial: initial must name a state in this scope (did you mean 'pay'?) (states in this scope: decide, done, pay, wait)",
		"JF0021", "/initial",
	},
	{
		"unbounded loop", `"otherwise": "wait"`, `"otherwise": "pay"`,
		`order.json:10:5: JF0022 /states/decide: automatic cycle requires a state limit (give a state on the cycle a "limit", the most visits a run may make to it)`,
		"JF0022", "/states/decide",
	},
	{
		"undeclared target in a nested flow", `"done": {"final": true}`,
		`"done": {"flow": {"initial": "x", "states": {"x": {"work": {"task": "t", "version": "1"}, "then": "paid"}, "paid2": {"final": true}}}, "then": "end"}, "end": {"final": true}`,
		"order.json:18:95: JF0021 /states/done/flow/states/x/then: undeclared state 'paid' (did you mean 'paid2'?) (states in this scope: paid2, x) [reference path /states/done/flow/states]",
		"JF0021", "/states/done/flow/states",
	},
	{
		"JSON syntax", `"revision": "r1",`, `"revision": "r1"`,
		`order.json:4:3: JF0021 '': workflow must be JSON: invalid character '"': expected ',' or '}' after a member`,
		"JF0021", "",
	},
}

func TestDiagnose(t *testing.T) {
	for _, c := range diagnoseCases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(orderDoc, c.old) {
				t.Fatalf("the document lacks %q", c.old)
			}
			data := []byte(strings.Replace(orderDoc, c.old, c.new, 1))
			_, err := workflow.CompileJSON(data, workflow.Options{})
			if err == nil {
				t.Fatal("the document compiled")
			}
			d := Diagnose(data, err)
			if got := d.Text("order.json"); got != c.want {
				t.Errorf("text:\n got %s\nwant %s", got, c.want)
			}
			if d.Code != c.code || d.Path == nil || *d.Path != c.path || d.Message != err.Error() {
				t.Errorf("code %s path %v message %q; want the engine's %s %s %q", d.Code, d.Path, d.Message, c.code, c.path, err.Error())
			}
		})
	}
}

// TestDiagnosticJSON keeps the reference's members and adds the author's.
func TestDiagnosticJSON(t *testing.T) {
	data := []byte(strings.Replace(orderDoc, `"then": "decide"`, `"then": "decidee"`, 1))
	_, err := workflow.CompileJSON(data, workflow.Options{})
	out, jerr := json.Marshal(Diagnose(data, err))
	if jerr != nil {
		t.Fatal(jerr)
	}
	want := `{"code":"JF0021","path":"/states","message":"JF0021: undeclared state 'decidee' in this scope at /states","line":8,"column":7,"source_path":"/states/pay/then","reason":"undeclared state 'decidee' (did you mean 'decide'?)","hint":"states in this scope: decide, done, pay, wait"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestNearest(t *testing.T) {
	for _, c := range []struct {
		word string
		list []string
		want string
	}{
		{"decidee", []string{"pay", "decide", "done"}, "decide"},
		{"wrk", []string{"work", "input"}, "work"},
		{"x", []string{"pay", "done"}, ""},
		{"done", []string{"done", "dine"}, "dine"},
		{"shipping", []string{"ship", "pay"}, ""},
		{"idel", []string{"answer", "end", "idle"}, "idle"}, // a swap is one edit
		{"$tg", []string{"$gt", "$lt"}, "$gt"},
	} {
		if got := Nearest(c.word, c.list); got != c.want {
			t.Errorf("Nearest(%q, %v) = %q, want %q", c.word, c.list, got, c.want)
		}
	}
}

// FuzzDiagnose checks any refused text gets a diagnostic with the
// engine's code and message unchanged and a position inside the text.
func FuzzDiagnose(f *testing.F) {
	for _, c := range diagnoseCases {
		f.Add([]byte(strings.Replace(orderDoc, c.old, c.new, 1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := workflow.CompileJSON(data, workflow.Options{})
		if err == nil {
			return
		}
		d := Diagnose(data, err)
		if d.Message != err.Error() || d.Code == "" || d.Reason == "" {
			t.Fatalf("diagnostic %+v of %v", d, err)
		}
		if d.Line < 0 || d.Line > strings.Count(string(data), "\n")+1 || (d.Line > 0) != (d.Column > 0) {
			t.Fatalf("position %d:%d outside the text", d.Line, d.Column)
		}
	})
}
