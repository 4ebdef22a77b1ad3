package value

import "testing"

func TestBlank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s     string
		blank bool
	}{
		{"", true},
		{" \t\n\r\v\f", true},
		{"\u00a0\u2028\u2029\u3000\u2000\u200a", true},
		{"\ufeff", true},
		{"\u0085", false}, // NEL is not JavaScript whitespace
		{"\u200b", false}, // nor is the zero-width space
		{" x ", false},
	} {
		if got := Blank(tc.s); got != tc.blank {
			t.Errorf("Blank(%q) = %v, want %v", tc.s, got, tc.blank)
		}
	}
}
