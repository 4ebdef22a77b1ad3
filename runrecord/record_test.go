package runrecord

import (
	"testing"
)

func TestAppendBounded(t *testing.T) {
	t.Parallel()
	var s []uint64
	for i := range uint64(10) {
		prev := s
		s = AppendBounded(s, i, 3)
		if len(prev) > 0 && &prev[0] == &s[0] {
			t.Fatal("AppendBounded shares its result with its input")
		}
	}
	if len(s) != 3 || s[0] != 7 || s[2] != 9 {
		t.Errorf("got %v, want [7 8 9]", s)
	}
}
