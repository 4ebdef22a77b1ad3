package query

import (
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

// EvalMarked keeps the reference's empty marker where the evaluation
// left it; Eval and Unmark show it as the reference's JSON text does.
func TestEvalMarkedKeepsTheMarker(t *testing.T) {
	t.Parallel()
	const m = `{"$date-diff":["2026-01-01","$.missing","day"]}`
	for _, tc := range []struct {
		name, doc string
		// marked: the evaluation built the marker (the result may hold
		// it); holds: the result does
		marked, holds bool
		want          string // Eval's answer, and Unmark of EvalMarked's
	}{
		{"array element", `[` + m + `, 1]`, true, true, `[null,1]`},
		{"object member", `{"a":` + m + `,"b":[` + m + `]}`, true, true, `{"b":[null]}`},
		{"map pair", `{"$map":[["a",` + m + `]]}`, true, true, `{}`},
		{"read back through a path", `{"$let":{"d":[` + m + `]},"$return":["$d[0]",2]}`, true, false, `[2]`},
		{"no marker", `{"a":[1,{"$date-diff":["$.missing","2026-01-01","day"]}]}`, false, false, `{"a":[1]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := value.Decode([]byte(tc.doc), value.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			q, err := Compile(doc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			data := map[string]any{}
			v, _, err := q.Eval(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonText(v); got != tc.want {
				t.Errorf("Eval: %s, want %s", got, tc.want)
			}
			mv, _, marked, err := q.Within(nil).EvalMarked(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			if marked != tc.marked {
				t.Errorf("marked %v, want %v", marked, tc.marked)
			}
			if _, err := value.Canonical(mv); (err != nil) != tc.holds {
				t.Errorf("EvalMarked's result %v: canonical text error %v", mv, err)
			}
			if got := jsonText(Unmark(mv)); got != tc.want {
				t.Errorf("Unmark: %s, want %s", got, tc.want)
			}
		})
	}
}
