package workflow

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

func TestJSKeysAgreesWithValueKeys(t *testing.T) {
	t.Parallel()
	pool := []string{"", "0", "1", "2", "10", "01", "-1", "1.5", "4294967294", "4294967295", "99999999999",
		"a", "b", "A", "é", "\uff61", "😀", "😁", "\U00010000", "\ue000", "ab", "a\u0000", "__proto__", "~", "/"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		m := map[string]any{}
		for range r.IntN(len(pool)) {
			m[pool[r.IntN(len(pool))]] = nil
		}
		if got, want := jsKeys(m), value.Keys(m); !slices.Equal(got, want) {
			t.Fatalf("jsKeys %q, value.Keys %q", got, want)
		}
	}
}
