package policy

import (
	"errors"
	"reflect"
	"testing"
)

func TestChildrenParse(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(`{"$children":{"review@1":{"workflow":"review"},"ship@2":{"workflow":"shipping","cascade":false}},"*":{"maxAttempts":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Child{"review@1": {Workflow: "review", Cascade: true}, "ship@2": {Workflow: "shipping", Cascade: false}}
	if got := p.Children(); !reflect.DeepEqual(got, want) {
		t.Errorf("children %+v, want %+v", got, want)
	}
	if got := p.ChildKeys(); !reflect.DeepEqual(got, []string{"review@1", "ship@2"}) {
		t.Errorf("keys %v", got)
	}
	// The canonical form keeps the bindings, and reads back the same.
	q, err := Parse(p.Canonical())
	if err != nil || !reflect.DeepEqual(q.Children(), want) || string(q.Canonical()) != string(p.Canonical()) {
		t.Errorf("round trip %s: %v", p.Canonical(), err)
	}
	only, err := Parse([]byte(`{"$children":{"a@1":{"workflow":"w"}}}`))
	if err != nil || only.Empty() {
		t.Errorf("a policy of bindings only is empty or refused: %v", err)
	}
}

func TestChildrenRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, pointer string }{
		{`{"$children":[]}`, "/$children"},
		{`{"$children":{"review":{"workflow":"w"}}}`, "/$children/review"},
		{`{"$children":{"re.view@1":{"workflow":"w"}}}`, "/$children/re.view@1"},
		{`{"$children":{"review@1":"w"}}`, "/$children/review@1"},
		{`{"$children":{"review@1":{}}}`, "/$children/review@1"},
		{`{"$children":{"review@1":{"workflow":"a b"}}}`, "/$children/review@1/workflow"},
		{`{"$children":{"review@1":{"workflow":"w","cascade":"no"}}}`, "/$children/review@1/cascade"},
		{`{"$children":{"review@1":{"workflow":"w","wait":true}}}`, "/$children/review@1/wait"},
		{`{"$children":{},"$children":{}}`, "/$children"},
	} {
		_, err := Parse([]byte(tc.in))
		var pe *Error
		if !errors.As(err, &pe) || pe.Pointer != tc.pointer {
			t.Errorf("Parse(%s) = %v, want an error at %s", tc.in, err, tc.pointer)
		}
	}
}
