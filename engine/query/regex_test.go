package query

import (
	"strings"
	"testing"
)

// TestIRegexpUnroll checks the Go syntax of the pass that unrolls nested
// counts: only a group holding a counted repetition is written as
// copies, not an atom whose text has a '{' of its own (\{, [{], \p{L}).
func TestIRegexpUnroll(t *testing.T) {
	t.Parallel()
	tests := []struct{ pattern, want string }{
		{`a{3}`, `a{3}`},
		{`a{2,}`, `a{2,}`},
		{`(a{2}){2}`, `(?:(?:a{2}))(?:(?:a{2}))`},
		{`(a{2}){1,2}`, `(?:(?:a{2}))(?:(?:a{2}))?`},
		{`(a{2}){1,}`, `(?:(?:a{2}))(?:(?:a{2}))*`},
		{`((a){2}b){2}`, `(?:(?:(?:a){2}b))(?:(?:(?:a){2}b))`},
		{`(a{2})*`, `(?:a{2})*`},
		{`\{{3}`, `\{{3}`},
		{`\{{2,}`, `\{{2,}`},
		{`\}{3}`, `\}{3}`},
		{`[{]{3}`, `[\{]{3}`},
		{`\p{L}{3}`, `\p{L}{3}`},
		{`(\{x){3}`, `(?:\{x){3}`},
		{`(\{){2}(a{2}){2}`, `(?:\{){2}(?:(?:a{2}))(?:(?:a{2}))`},
	}
	for _, tt := range tests {
		re, err := translateIRegexp(tt.pattern, false, true)
		if err != nil {
			t.Errorf("%s: %v", tt.pattern, err)
			continue
		}
		if got := re.String(); got != tt.want {
			t.Errorf("%s is written %s, want %s", tt.pattern, got, tt.want)
		}
	}
}

// TestIRegexpNestedCounts checks patterns whose nested counts pass Go's
// 1000, which ECMAScript takes: they compile, and match as written.
func TestIRegexpNestedCounts(t *testing.T) {
	t.Parallel()
	a1200 := strings.Repeat("a", 1200)
	tests := []struct {
		pattern string
		full    bool
		input   string
		want    bool
	}{
		{`(a{2}){600}`, true, a1200, true},
		{`(a{2}){600}`, true, a1200[1:], false},
		{`(a{2}){600}\{{2}`, true, a1200 + "{{", true},
		{`(a{2}){600}\{{2}`, true, a1200 + "{", false},
		{`(a{2}){600}\{{2}`, false, "x" + a1200 + "{{{", true},
		// a literal '{' in the atom once had it written as 10000 copies,
		// which Go refused as too large
		{`(a{2}){600}[\{\p{Lu}]{10000}`, true, "", false},
		{`(a{2}){600}\p{L}{10000}`, true, "", false},
	}
	for _, tt := range tests {
		re := compileIRegexp(tt.pattern, tt.full)
		if re == nil {
			t.Errorf("%s: refused", tt.pattern)
			continue
		}
		if got := re.MatchString(tt.input); got != tt.want {
			t.Errorf("%s (full %v) on %.20q…: %v, want %v", tt.pattern, tt.full, tt.input, got, tt.want)
		}
	}
}
