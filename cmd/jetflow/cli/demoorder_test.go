package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/client"
)

func TestNodeOrderIsTheDocuments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, want string }{
		{string(demoOrder), "order stock price fraud verdict out"},
		{`{"states":{"a":{"work":{"dag":{"nodes":{"z":{"kind":"input","x":{"nodes":1}},"b":{"kind":"output"}}}}},"nodes":[1]}}`, "z b"},
		{`{"nodes":{}}`, ""},
		{`not json`, ""},
	} {
		if got := strings.Join(nodeOrder([]byte(c.doc)), " "); got != c.want {
			t.Errorf("nodeOrder(%.40q) = %q, want %q", c.doc, got, c.want)
		}
	}
}

// TestDeclaredOrder: the demo's summary lists tasks by state, then as the
// document declares them, whatever order they settled in; retries keep
// their order.
func TestDeclaredOrder(t *testing.T) {
	t.Parallel()
	settled := []client.Progress{
		{State: "/states/fulfil/flow/states/notify", Node: "task", Name: "notify"},
		{State: "/states/check", Node: "fraud", Name: "fraud"},
		{State: "/states/fulfil/flow/states/ship", Node: "task", Name: "ship", Retry: true},
		{State: "/states/check", Node: "stock", Name: "stock"},
		{State: "/states/fulfil/flow/states/ship", Node: "task", Name: "ship", OK: true},
		{State: "/states/check", Node: "price", Name: "price"},
	}
	path := []string{"check", "decide", "await-payment", "fulfil", "fulfil/ship", "fulfil/notify", "fulfil/sent", "done"}
	var got []string
	for _, p := range declaredOrder(nodeOrder(demoOrder), path, settled) {
		got = append(got, taskMark(p))
	}
	if want := []string{"stock ✗", "price ✗", "fraud ✗", "ship ↻", "ship ✓", "notify ✗"}; !slices.Equal(got, want) {
		t.Errorf("declaredOrder = %q, want %q", got, want)
	}
}

func FuzzNodeOrder(f *testing.F) {
	f.Add(string(demoOrder))
	f.Add(`{"nodes":{"a":{},"b":[{"nodes":{"c":1}}]}}`)
	f.Add(`[{"nodes":{"x":null}}]`)
	f.Fuzz(func(t *testing.T, doc string) {
		// Never panics; every id is a member name, which a colon follows.
		if ids := nodeOrder([]byte(doc)); len(ids) > strings.Count(doc, ":") {
			t.Fatalf("%d ids from a document with %d colons", len(ids), strings.Count(doc, ":"))
		}
	})
}
