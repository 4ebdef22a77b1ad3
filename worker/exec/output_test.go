package exec

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"empty", 10, nil, "(nothing on stderr)"},
		{"fits", 10, []string{"ab", "c\n"}, "abc"},
		{"cut at a line", 10, []string{"line one\n", "xtwo\nthree\n"}, "...three"},
		{"one long write", 4, []string{"abcdefgh"}, "...efgh"},
		{"split rune", 4, []string{"xé€"}, "...€"},
		{"invalid utf-8", 10, []string{"a\xffb"}, "a\uFFFDb"},
		{"newline at the very end only", 5, []string{"abcdefg\n"}, "...defg"},
		{"cut right after a newline", 10, []string{"line one\n", "two\nthree\n"}, "...two\nthree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tl := &tail{max: c.max}
			for _, w := range c.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if len(tl.buf) > c.max {
				t.Errorf("kept %d bytes, max %d", len(tl.buf), c.max)
			}
			if got := tl.text(); got != c.want {
				t.Errorf("text = %q, want %q", got, c.want)
			}
		})
	}
}

func FuzzOutput(f *testing.F) {
	for _, s := range []string{`{"a":1}`, " null\n", "1 2", "", "x", `"\u00"`, "[1,", "{}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &capped{max: 1 << 20}
		_, _ = c.Write(data)
		v, err := c.value()
		if err != nil {
			return
		}
		// Whatever is accepted is one valid JSON value that is all of stdout.
		if !json.Valid(v) || strings.TrimSpace(string(data)) != strings.TrimSpace(string(v)) {
			t.Fatalf("accepted %q as %q", data, v)
		}
	})
}

func TestCapped(t *testing.T) {
	t.Parallel()
	c := &capped{max: 4}
	for _, w := range []string{"12", "345", "6"} {
		if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v (a program must never be blocked)", n, err)
		}
	}
	if c.buf.String() != "1234" {
		t.Errorf("kept %q", c.buf.String())
	}
	if _, err := c.value(); err == nil || !strings.Contains(err.Error(), "exceeds 4 bytes") {
		t.Errorf("value = %v", err)
	}
}
