package dag_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// mustDecode parses a JSON document for a test.
func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := value.Decode([]byte(s), value.Limits{})
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// A minimal valid shell the table entries vary.
const shell = `{"$dag":"0.1","nodes":{"in":{"kind":"input"},"t":{"kind":"task","run":"fetch"},"out":{"kind":"output"}},
	"edges":[{"from":"in","to":"t"},{"from":"t","to":"out"}]}`

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		doc   string
		tasks map[string]string
		code  fault.Code
		path  string
		// reason is a substring of the expected reason
		reason string
	}{
		{"JF0010 not an object", `[1]`, nil, fault.JF0010, "", "must be an object"},
		{"JF0010 missing $dag", `{"nodes":{}}`, nil, fault.JF0010, "/$dag", "(got undefined)"},
		{"JF0010 wrong $dag", `{"$dag":"0.2"}`, nil, fault.JF0010, "/$dag", `(got "0.2")`},
		{"JF0010 object $dag", `{"$dag":{"b":1,"2":[true]}}`, nil, fault.JF0010, "/$dag", `(got {"2":[true],"b":1})`},
		{"JF0011 nodes array", `{"$dag":"0.1","nodes":[]}`, nil, fault.JF0011, "/nodes", "object of node declarations"},
		{"JF0011 node not object", `{"$dag":"0.1","nodes":{"a/b":1}}`, nil, fault.JF0011, "/nodes/a~1b", "input|output|const|query|jslt|task"},
		{"JF0011 unknown kind", `{"$dag":"0.1","nodes":{"a":{"kind":"map"}}}`, nil, fault.JF0011, "/nodes/a/kind", "node 'a'"},
		{"JF0011 checkpoint not boolean", `{"$dag":"0.1","nodes":{"a":{"kind":"input","checkpoint":1}}}`, nil, fault.JF0011, "/nodes/a/checkpoint", "not a boolean"},
		{"JF0011 const without value", `{"$dag":"0.1","nodes":{"c":{"kind":"const"}}}`, nil, fault.JF0011, "/nodes/c", `"value"`},
		{"JF0011 query without query", `{"$dag":"0.1","nodes":{"q":{"kind":"query"}}}`, nil, fault.JF0011, "/nodes/q", `"query"`},
		{"JF0011 jslt without stylesheet", `{"$dag":"0.1","nodes":{"j":{"kind":"jslt"}}}`, nil, fault.JF0011, "/nodes/j", `"stylesheet"`},
		{"JF0011 task without run", `{"$dag":"0.1","nodes":{"t":{"kind":"task","run":""}}}`, nil, fault.JF0011, "/nodes/t/run", `"run"`},
		{"JF0011 blank version", `{"$dag":"0.1","nodes":{"t":{"kind":"task","run":"x","version":" "}}}`, nil, fault.JF0011, "/nodes/t/version", "not a non-empty string"},
		{"JF0011 durable task without version", `{"$dag":"0.1","nodes":{"t":{"kind":"task","run":"x"},"o":{"kind":"output","checkpoint":true}}}`, nil, fault.JF0011, "/nodes/t/version", "workflow with checkpoints"},
		{"JF0011 first node in JS key order", `{"$dag":"0.1","nodes":{"b":{},"a":{},"7":{}}}`, nil, fault.JF0011, "/nodes/7/kind", "node '7'"},
		{"JF0012 edges not array", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":{}}`, nil, fault.JF0012, "/edges", "array of edge entries"},
		{"JF0012 edge not object", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":[1]}`, nil, fault.JF0012, "/edges/0", "must be an object"},
		{"JF0012 from not string", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":[{"to":"o"}]}`, nil, fault.JF0012, "/edges/0/from", `"from"`},
		{"JF0012 to not string", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":[{"from":"o","to":1}]}`, nil, fault.JF0012, "/edges/0/to", `"to"`},
		{"JF0012 port empty", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":[{"from":"o","to":"o","port":""}]}`, nil, fault.JF0012, "/edges/0/port", `"port"`},
		{"JF0013 from undeclared", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":[{"from":"x","to":"o"}]}`, nil, fault.JF0013, "/edges/0/from", "undeclared node 'x'"},
		{"JF0013 to undeclared", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"y"}]}`, nil, fault.JF0013, "/edges/0/to", "undeclared node 'y'"},
		{"JF0014 query", `{"$dag":"0.1","nodes":{"q":{"kind":"query","query":{"$bogus":1}}}}`, nil, fault.JF0014, "/nodes/q/query", "failed to compile: JQ0002"},
		{"JF0014 with", `{"$dag":"0.1","nodes":{"t":{"kind":"task","run":"x","with":{"$bogus":1}}}}`, nil, fault.JF0014, "/nodes/t/with", "failed to compile: JQ0002"},
		{"JF0014 select", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"o","select":{"$bogus":1}}]}`, nil, fault.JF0014, "/edges/0/select", "failed to compile: JQ0002"},
		{"JF0014 jslt", `{"$dag":"0.1","nodes":{"j":{"kind":"jslt","stylesheet":{"rules":[]}}}}`, nil, fault.JF0014, "/nodes/j/stylesheet", "failed to compile: JT0001"},
		{"JF0015 into input", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"i"}]}`, nil, fault.JF0015, "/edges/0/to", "input nodes accept no inbound edge"},
		{"JF0015 from output", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"o","to":"o"}]}`, nil, fault.JF0015, "/edges/0/from", "leaves the output node"},
		{"JF0015 no inbound", `{"$dag":"0.1","nodes":{"o":{"kind":"output"}},"edges":[]}`, nil, fault.JF0015, "/nodes/o", "output node 'o' has no inbound edge"},
		{"JF0015 unported fan-in", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"o"},{"from":"i","to":"o"}]}`, nil, fault.JF0015, "/edges/0", "all-ported"},
		{"JF0015 duplicate port", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"o","port":"p"},{"from":"i","to":"o","port":"p"}]}`, nil, fault.JF0015, "/edges/1/port", "duplicates port 'p'"},
		{"JF0016 cycle", `{"$dag":"0.1","nodes":{"i":{"kind":"input"},"a":{"kind":"task","run":"x"},"b":{"kind":"task","run":"x"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"o"},{"from":"b","to":"a"},{"from":"a","to":"b"}]}`, nil, fault.JF0016, "/edges/1", "cycle among: a, b"},
		{"JF0017 none", `{"$dag":"0.1","nodes":{"i":{"kind":"input"}}}`, nil, fault.JF0017, "/nodes", "(found 0)"},
		{"JF0017 two", `{"$dag":"0.1","nodes":{"a":{"kind":"output"},"b":{"kind":"output"}}}`, nil, fault.JF0017, "/nodes", "(found 2)"},
		{"JF0018 unregistered", shell, map[string]string{}, fault.JF0018, "/nodes/t/run", "names the handler 'fetch'"},
		{"JF0019 bare handler", strings.Replace(shell, `"run":"fetch"`, `"run":"fetch","version":"2"`, 1), map[string]string{"fetch": ""}, fault.JF0019, "/nodes/t/version", "as a bare handler with no version"},
		{"JF0019 other version", strings.Replace(shell, `"run":"fetch"`, `"run":"fetch","version":"2"`, 1), map[string]string{"fetch": "1"}, fault.JF0019, "/nodes/t/version", "at version '1'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := dag.Compile(mustDecode(t, tt.doc), dag.Options{Tasks: tt.tasks})
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if fe.Code != tt.code || fe.Path != tt.path || !fe.HasPath || !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("got %v\nwant %s %q at %q", fe, tt.code, tt.reason, tt.path)
			}
		})
	}
}

func TestCompileRegistry(t *testing.T) {
	t.Parallel()
	versioned := strings.Replace(shell, `"run":"fetch"`, `"run":"fetch","version":"2"`, 1)
	tests := []struct {
		name  string
		doc   string
		tasks map[string]string
		ok    bool
	}{
		{"no registry takes names as written", shell, nil, true},
		{"no registry takes declared versions as written", versioned, nil, true},
		{"registered bare handler", shell, map[string]string{"fetch": ""}, true},
		{"registered version, none declared", shell, map[string]string{"fetch": "1"}, true},
		{"registered version matches", versioned, map[string]string{"fetch": "2"}, true},
		{"blank registry version is the caller's error", shell, map[string]string{"fetch": " "}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := dag.Compile(mustDecode(t, tt.doc), dag.Options{Tasks: tt.tasks})
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && fault.CodeOf(err) != "" {
				t.Errorf("registry error %v carries a document code", err)
			}
			if err == nil {
				info, _ := d.Node("t")
				if info.Task != "fetch" || info.Kind != dag.KindTask || info.Path != "/nodes/t" {
					t.Errorf("node info %+v", info)
				}
			}
		})
	}
}

func TestTaskVersions(t *testing.T) {
	t.Parallel()
	d, err := dag.Compile(mustDecode(t, `{"$dag":"0.1","nodes":{
		"in":{"kind":"input"},
		"b":{"kind":"task","run":"x","version":"vb"},
		"a/c":{"kind":"task","run":"x","version":"vac"},
		"10":{"kind":"task","run":"x","version":"v10"},
		"9":{"kind":"task","run":"x","version":"v9"},
		"n":{"kind":"task","run":"x"},
		"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"b"},{"from":"in","to":"a/c"},{"from":"in","to":"10"},{"from":"in","to":"9"},{"from":"in","to":"n"},{"from":"b","to":"out"}]}`), dag.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"b": "vb", "a~1c": "vac", "10": "v10", "9": "v9"}
	got := d.TaskVersions()
	if len(got) != len(want) {
		t.Fatalf("TaskVersions = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("TaskVersions[%q] = %q, want %q", k, got[k], v)
		}
	}
	if keys := strings.Join(d.TaskVersionKeys(), " "); keys != "10 9 a~1c b" {
		t.Errorf("TaskVersionKeys = %s", keys)
	}
}
