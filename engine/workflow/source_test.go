package workflow

import (
	"errors"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
)

// TestErrorSource checks each error whose reference path points away from
// the author's member carries that member's path, and the reference's
// code and path unchanged.
func TestErrorSource(t *testing.T) {
	t.Parallel()
	const head = `{"$workflow":"0.2","revision":"r","initial":"a","states":{`
	cases := []struct {
		name, doc, code, path, source string
	}{
		{"undeclared then", head + `"a":{"work":{"task":"t","version":"1"},"then":"x"}}}`, "JF0021", "/states", "/states/a/then"},
		{"missing otherwise", head + `"a":{"choose":[{"guard":true,"to":"b"}]},"b":{"final":true}}}`, "JF0021", "/states", "/states/a/otherwise"},
		{"undeclared branch target", head + `"a":{"on":[{"event":"e","to":"b"},{"event":"f","to":"z"}]},"b":{"final":true}}}`, "JF0021", "/states", "/states/a/on/1/to"},
		{"undeclared after target", head + `"a":{"on":[],"after":{"ms":1,"to":"z"}}}}`, "JF0021", "/states", "/states/a/after/to"},
		{"nested catch", head + `"a":{"flow":{"initial":"w","states":{"w":{"work":{"task":"t","version":"1"},"then":"e","catch":"a"},"e":{"final":true}}},"then":"b"},"b":{"final":true}}}`, "JF0021", "/states/a/flow/states", "/states/a/flow/states/w/catch"},
		{"undeclared initial", head + `"b":{"final":true}}}`, "JF0021", "/initial", ""},
		{"second branch's guard", head + `"a":{"choose":[{"guard":true,"to":"b"},{"guard":{"$nope":1},"to":"b"}],"otherwise":"b"},"b":{"final":true}}}`, "JF0007", "/transitions/1/guard", "/states/a/choose/1/guard"},
		{"wait guard", head + `"a":{"on":[{"event":"e","guard":{"$nope":1},"to":"b"}]},"b":{"final":true}}}`, "JF0007", "/transitions/0/guard", "/states/a/on/0/guard"},
		{"inline DAG", head + `"a":{"work":{"dag":{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"x"}]}},"then":"b"},"b":{"final":true}}}`, "JF0013", "/edges/0/to", "/states/a" + workPointer + "/dag/edges/0/to"},
		{"task shorthand", head + `"a":{"work":{"task":"t","version":"1","with":{"$nope":1}},"then":"b"},"b":{"final":true}}}`, "JF0014", "/nodes/task/with", "/states/a" + workPointer + "/with"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileJSON([]byte(c.doc), Options{})
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a fault", err)
			}
			if string(fe.Code) != c.code || fe.Path != c.path {
				t.Errorf("code %s path %s, want %s %s", fe.Code, fe.Path, c.code, c.path)
			}
			if fe.HasSource != (c.source != "") || fe.Source != c.source {
				t.Errorf("source %q (set %v), want %q", fe.Source, fe.HasSource, c.source)
			}
		})
	}
}
