package simtest

import (
	"strings"
	"testing"
)

const goldenWait = `{"calls":[
 {"status":"waiting","result":null,"snapshot":{"generation":2,"status":"waiting","context":{"visits":{"/states/w":1},"event":null}}},
 {"error":{"code":"JF2014","path":null,"message":"JF2014: event or resume observed a stale generation"}},
 {"status":"done","result":{"a":[1,2]},"snapshot":{"generation":4,"status":"done","context":{"visits":{"/states/w":1,"/states/d":1},"event":{"type":"go"}}}}]}`

func TestDiff(t *testing.T) {
	t.Parallel()
	swap := func(old, new string) string {
		if !strings.Contains(goldenWait, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(goldenWait, old, new, 1)
	}
	tests := []struct {
		name    string
		golden  string
		got     string
		ignore  []string
		pointer string // "" with ok=true means conforming
		ok      bool
	}{
		{name: "identical", golden: goldenWait, got: goldenWait, ok: true},
		{name: "generation ignored", golden: goldenWait, got: swap(`"generation":4`, `"generation":40`), ok: true},
		{name: "generation may be absent", golden: goldenWait, got: swap(`"generation":2,`, ``), ok: true},
		{name: "error message ignored", golden: goldenWait, got: swap(`observed a stale generation`, `stale`), ok: true},
		{name: "status differs", golden: goldenWait, got: swap(`"status":"done","result"`, `"status":"waiting","result"`), pointer: "/calls/2/status"},
		{name: "result differs deep", golden: goldenWait, got: swap(`[1,2]`, `[1,3]`), pointer: "/calls/2/result/a/1"},
		{name: "result array length", golden: goldenWait, got: swap(`[1,2]`, `[1]`), pointer: "/calls/2/result/a"},
		{name: "number vs string", golden: goldenWait, got: swap(`[1,2]`, `[1,"2"]`), pointer: "/calls/2/result/a/1"},
		{name: "pointer escapes key", golden: goldenWait, got: swap(`"/states/d":1`, `"/states/d":2`), pointer: "/calls/2/snapshot/context/visits/~1states~1d"},
		{name: "missing snapshot member", golden: goldenWait, got: swap(`,"event":{"type":"go"}`, ``), pointer: "/calls/2/snapshot/context/event"},
		{name: "unexpected snapshot member", golden: goldenWait, got: swap(`"event":null}`, `"event":null,"extra":1}`), pointer: "/calls/0/snapshot/context/extra"},
		{name: "error code differs", golden: goldenWait, got: swap(`"code":"JF2014"`, `"code":"JF2013"`), pointer: "/calls/1/error/code"},
		{name: "null path is not root", golden: goldenWait, got: swap(`"path":null`, `"path":""`), pointer: "/calls/1/error/path"},
		{name: "error message required", golden: goldenWait, got: swap(`,"message":"JF2014: event or resume observed a stale generation"`, ``), pointer: "/calls/1/error/message"},
		{
			name: "success where error expected", golden: goldenWait,
			got:     swap(`{"error":{"code":"JF2014","path":null,"message":"JF2014: event or resume observed a stale generation"}}`, `{"status":"done","result":null,"snapshot":{}}`),
			pointer: "/calls/1/error",
		},
		{name: "too few calls", golden: goldenWait, got: `{"calls":[]}`, pointer: "/calls"},
		{name: "call entry not an object", golden: goldenWait, got: `{"calls":[1]}`, pointer: "/calls/0"},
		{name: "compile error instead of calls", golden: goldenWait, got: `{"compileError":{"code":"JF0021","path":"","message":"x"}}`, pointer: "/calls"},
		{name: "not JSON", golden: goldenWait, got: `{"calls":`, pointer: ""},
		{name: "trailing garbage", golden: goldenWait, got: goldenWait + ` {}`, pointer: ""},
		{name: "ignored member", golden: goldenWait, got: swap(`"/states/d":1`, `"/states/d":2`), ignore: []string{"/snapshot/context/visits"}, ok: true},
		{
			name: "compile error matches", golden: `{"compileError":{"code":"JF0021","path":"/states","message":"a"}}`,
			got: `{"compileError":{"code":"JF0021","path":"/states","message":"b"}}`, ok: true,
		},
		{
			name: "compile error path differs", golden: `{"compileError":{"code":"JF0021","path":"/states","message":"a"}}`,
			got: `{"compileError":{"code":"JF0021","path":"/states/a","message":"a"}}`, pointer: "/compileError/path",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Diff([]byte(tt.golden), []byte(tt.got), tt.ignore...)
			if err != nil {
				t.Fatalf("Diff: %v", err)
			}
			switch {
			case tt.ok && m != nil:
				t.Fatalf("want conforming, got %v", m)
			case !tt.ok && m == nil:
				t.Fatalf("want a mismatch at %q, got none", tt.pointer)
			case !tt.ok && m.Pointer != tt.pointer:
				t.Fatalf("mismatch at %q, want %q: %v", m.Pointer, tt.pointer, m)
			}
		})
	}
}

func TestDiffRefusesBadGolden(t *testing.T) {
	t.Parallel()
	for _, golden := range []string{``, `[]`, `{}`, `{"calls":[],"compileError":{}}`, `{"other":1}`, `{"calls":{}}`} {
		if _, err := Diff([]byte(golden), []byte(`{"calls":[]}`)); err == nil {
			t.Errorf("golden %q accepted", golden)
		}
	}
}

func TestMismatchMessage(t *testing.T) {
	t.Parallel()
	m, err := Diff([]byte(goldenWait), []byte(strings.Replace(goldenWait, `[1,2]`, `[1,3]`, 1)))
	if err != nil || m == nil {
		t.Fatalf("Diff = %v, %v", m, err)
	}
	msg := m.Error()
	for _, part := range []string{"/calls/2/result/a/1", "value differs", "want 2", "got  3"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

func FuzzDiff(f *testing.F) {
	f.Add([]byte(goldenWait), []byte(goldenWait))
	f.Add([]byte(goldenWait), []byte(`{"calls":[{"error":{}}]}`))
	f.Add([]byte(`{"compileError":{"code":"JF0021","path":"","message":""}}`), []byte(`{"compileError":null}`))
	for _, c := range mustCases(f) {
		f.Add([]byte(c.Golden), []byte(c.Golden))
	}
	f.Fuzz(func(t *testing.T, golden, got []byte) {
		m, err := Diff(golden, got)
		if err != nil {
			return
		}
		if m != nil && m.Error() == "" {
			t.Fatal("empty mismatch message")
		}
		// A usable golden always conforms to itself.
		if self, err := Diff(golden, golden); err != nil || self != nil {
			t.Fatalf("golden differs from itself: %v %v", self, err)
		}
	})
}
