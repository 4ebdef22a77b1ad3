package jslt_test

import (
	"testing"

	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/value"
)

// TestPathRulesWalkAnOrderedInput: a stylesheet with path rules reads an
// input that holds objects built at run time (another DAG node's value,
// a task's result as its worker wrote it) as the reference reads it by
// reference: its rules find their locations in it, and the built-in
// rule rebuilds it in its order.
func TestPathRulesWalkAnOrderedInput(t *testing.T) {
	t.Parallel()
	in, err := value.DecodeOrdered([]byte(`{"zeta":{"y":1,"x":2},"10":1,"9":2,"alpha":[{"d":1,"c":2}]}`), value.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sheet, want string }{
		{`[{"match":"$.zeta.x","body":"X"}]`, `{"9":2,"10":1,"zeta":{"y":1,"x":"X"},"alpha":[{"d":1,"c":2}]}`},
		{`[{"match":"$.zeta.y","body":"$path"}]`, `{"9":2,"10":1,"zeta":{"y":"$['zeta']['y']","x":2},"alpha":[{"d":1,"c":2}]}`},
		{
			`[{"match":"$.alpha[0]","body":{"$string-join":[{"$for":{"e":{"$entries":"$"}},"$return":"$e.key"},","]}}]`,
			`{"9":2,"10":1,"zeta":{"y":1,"x":2},"alpha":["d,c"]}`,
		},
		{`[{"match":"$","body":{"$apply":["$.*"]}},{"match":"$.zeta","body":"Z"}]`, `[2,1,"Z",[{"d":1,"c":2}]]`},
	} {
		s, err := jslt.Compile(decode(t, c.sheet))
		if err != nil {
			t.Fatal(err)
		}
		res, ok, _, err := s.TransformOrdered(nil, in, nil, true)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", c.sheet, ok, err)
		}
		if got, _ := value.JSText(res); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.sheet, got, c.want)
		}
	}
}
