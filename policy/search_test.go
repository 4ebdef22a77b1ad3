package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestSearchAttributes(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(`{"$run":{"search":{"customer":"/input/customer","orderId":"/data/order/id"},"retention":"72h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Search(); len(s) != 2 || s["customer"] != "/input/customer" || s["orderId"] != "/data/order/id" {
		t.Errorf("Search() = %v", s)
	}
	if c := string(p.Canonical()); !strings.Contains(c, `"search":{"customer":"/input/customer","orderId":"/data/order/id"}`) {
		t.Errorf("canonical form %s lacks the search attributes", c)
	}
	if again, err := Parse(p.Canonical()); err != nil || string(again.Canonical()) != string(p.Canonical()) {
		t.Errorf("canonical form does not parse to itself: %v", err)
	}
	if (*Policy)(nil).Search() != nil {
		t.Error("the empty policy has search attributes")
	}
	for _, c := range []struct{ doc, ptr, want string }{
		{`{"$run":{"search":[]}}`, "/$run/search", "must be an object"},
		{`{"$run":{"search":{"a.b":"/input/x"}}}`, "/$run/search/a.b", "search attribute name"},
		{`{"$run":{"search":{"x":"/state/x"}}}`, "/$run/search/x", "into the run's input or data"},
		{`{"$run":{"search":{"x":1}}}`, "/$run/search/x", "into the run's input or data"},
		{`{"$run":{"search":{"a":"/input","b":"/input","c":"/input","d":"/input","e":"/input","f":"/input","g":"/input","h":"/input","i":"/input"}}}`, "/$run/search", "at most 8"},
		{`{"$run":{"search":{},"search":{}}}`, "/$run/search", "appears twice"},
		{`{"$run":{"other":1}}`, "/$run/other", "settings: retention, archive, search"},
	} {
		_, err := Parse([]byte(c.doc))
		var pe *Error
		if !errors.As(err, &pe) || pe.Pointer != c.ptr || !strings.Contains(pe.Reason, c.want) {
			t.Errorf("Parse(%s) = %v, want %q at %s", c.doc, err, c.want, c.ptr)
		}
	}
}
