package simtest

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"unicode/utf8"

	"github.com/jetflow/jetflow/engine/value"
)

// Mismatch is the first difference between a golden and a produced output.
type Mismatch struct {
	// Pointer locates the difference in the output line ("" is the root).
	Pointer string
	Reason  string
	// Want and Got are canonical excerpts; "" when the member is absent.
	Want, Got string
}

func (m *Mismatch) Error() string {
	at := m.Pointer
	if at == "" {
		at = "''"
	}
	s := fmt.Sprintf("at %s: %s", at, m.Reason)
	if m.Want != "" || m.Got != "" {
		s += fmt.Sprintf("\n\twant %s\n\tgot  %s", orAbsent(m.Want), orAbsent(m.Got))
	}
	return s
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// Compare fails t with the first difference between c's golden and got, an
// output line of the Go simulator. ignore lists JSON Pointers relative to
// each call entry that are skipped, e.g. "/snapshot/identity".
func Compare(t testing.TB, c Case, got []byte, ignore ...string) {
	t.Helper()
	m, err := Diff(c.Golden, got, ignore...)
	if err != nil {
		t.Fatalf("%s: golden unusable: %v", c, err)
	}
	if m != nil {
		t.Errorf("%s (%s)\n%v\nreference: %s", c, c.Description, m, c.Rerun())
	}
}

// Diff compares an output line with the golden under the simulate contract:
// status, result and snapshot must be equal except the snapshot's
// generation (a count of the reference's writes, which an implementation
// need not mirror); errors, per call or at compile time, must agree on code
// and path (null is no location, "" the root) and may differ in message.
// It answers nil when got conforms and an error when golden is not usable.
func Diff(golden, got []byte, ignore ...string) (*Mismatch, error) {
	want, err := value.Decode(golden, value.Limits{})
	if err != nil {
		return nil, fmt.Errorf("golden is not JSON: %w", err)
	}
	w, ok := want.(map[string]any)
	if !ok || len(w) != 1 || (w["calls"] == nil && w["compileError"] == nil) {
		return nil, fmt.Errorf("golden must be {\"calls\": [...]} or {\"compileError\": {...}}")
	}
	have, err := value.Decode(got, value.Limits{})
	if err != nil {
		return &Mismatch{Reason: "output is not one JSON value: " + err.Error()}, nil
	}
	d := differ{ignore: ignore}
	g, ok := have.(map[string]any)
	if !ok {
		return d.typeMismatch("", want, have), nil
	}
	if m := d.sameKeys("", w, g); m != nil {
		return m, nil
	}
	if ce, ok := w["compileError"]; ok {
		return d.coded("/compileError", ce, g["compileError"]), nil
	}
	wc, ok := w["calls"].([]any)
	if !ok {
		return nil, fmt.Errorf("golden calls is not an array")
	}
	gc, ok := g["calls"].([]any)
	if !ok {
		return d.typeMismatch("/calls", wc, g["calls"]), nil
	}
	for i := range min(len(wc), len(gc)) {
		if m := d.call(fmt.Sprintf("/calls/%d", i), wc[i], gc[i]); m != nil {
			return m, nil
		}
	}
	if len(wc) != len(gc) {
		return &Mismatch{Pointer: "/calls", Reason: fmt.Sprintf("%d calls answered, want %d", len(gc), len(wc))}, nil
	}
	return nil, nil
}

type differ struct {
	ignore []string
}

func (d differ) call(at string, want, got any) *Mismatch {
	w, ok := want.(map[string]any)
	if !ok {
		return &Mismatch{Pointer: at, Reason: "golden call entry is not an object"}
	}
	g, ok := got.(map[string]any)
	if !ok {
		return d.typeMismatch(at, want, got)
	}
	if m := d.sameKeys(at, w, g); m != nil {
		return m
	}
	if e, failed := w["error"]; failed {
		return d.coded(at+"/error", e, g["error"])
	}
	for _, key := range []string{"status", "result", "snapshot"} {
		wv, gv := w[key], g[key]
		if key == "snapshot" {
			wv, gv = withoutGeneration(wv), withoutGeneration(gv)
		}
		if m := d.walk(at+"/"+key, "/"+key, wv, gv); m != nil {
			return m
		}
	}
	return nil
}

// coded compares a {code, path, message} error by code and path.
func (d differ) coded(at string, want, got any) *Mismatch {
	w, _ := want.(map[string]any)
	g, ok := got.(map[string]any)
	if !ok {
		return d.typeMismatch(at, want, got)
	}
	for _, key := range []string{"code", "path", "message"} {
		if _, ok := g[key]; !ok {
			return &Mismatch{Pointer: at + "/" + key, Reason: "missing member", Want: excerpt(w[key])}
		}
	}
	for _, key := range []string{"code", "path"} {
		if !value.Equal(w[key], g[key]) {
			return &Mismatch{
				Pointer: at + "/" + key, Reason: key + " differs (message: " + excerpt(g["message"]) + ")",
				Want: excerpt(w[key]), Got: excerpt(g[key]),
			}
		}
	}
	return nil
}

// walk finds the first difference below at; rel is at relative to the call
// entry, which is what ignore pointers name.
func (d differ) walk(at, rel string, want, got any) *Mismatch {
	if slices.Contains(d.ignore, rel) {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return d.typeMismatch(at, want, got)
		}
		for _, k := range unionKeys(w, g) {
			seg := "/" + value.EncodePointerSegment(k)
			if slices.Contains(d.ignore, rel+seg) {
				continue
			}
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inG:
				return &Mismatch{Pointer: at + seg, Reason: "missing member", Want: excerpt(wv)}
			case !inW:
				return &Mismatch{Pointer: at + seg, Reason: "unexpected member", Got: excerpt(gv)}
			}
			if m := d.walk(at+seg, rel+seg, wv, gv); m != nil {
				return m
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return d.typeMismatch(at, want, got)
		}
		for i := range min(len(w), len(g)) {
			seg := fmt.Sprintf("/%d", i)
			if m := d.walk(at+seg, rel+seg, w[i], g[i]); m != nil {
				return m
			}
		}
		if len(w) != len(g) {
			return &Mismatch{
				Pointer: at, Reason: fmt.Sprintf("array length %d, want %d", len(g), len(w)),
				Want: excerpt(want), Got: excerpt(got),
			}
		}
		return nil
	}
	if value.TypeName(want) != value.TypeName(got) {
		return d.typeMismatch(at, want, got)
	}
	if !value.Equal(want, got) {
		return &Mismatch{Pointer: at, Reason: "value differs", Want: excerpt(want), Got: excerpt(got)}
	}
	return nil
}

func (d differ) typeMismatch(at string, want, got any) *Mismatch {
	return &Mismatch{
		Pointer: at, Reason: fmt.Sprintf("%s where %s is expected", value.TypeName(got), value.TypeName(want)),
		Want: excerpt(want), Got: excerpt(got),
	}
}

// sameKeys reports the first member present on one side only.
func (d differ) sameKeys(at string, w, g map[string]any) *Mismatch {
	for _, k := range unionKeys(w, g) {
		seg := at + "/" + value.EncodePointerSegment(k)
		if _, ok := g[k]; !ok {
			return &Mismatch{Pointer: seg, Reason: "missing member", Want: excerpt(w[k])}
		}
		if _, ok := w[k]; !ok {
			return &Mismatch{Pointer: seg, Reason: "unexpected member", Got: excerpt(g[k])}
		}
	}
	return nil
}

func withoutGeneration(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if k != "generation" {
			out[k] = x
		}
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

const excerptMax = 160

func excerpt(v any) string {
	s, err := value.Canonical(v)
	if err != nil {
		s = fmt.Sprintf("%v", v)
	}
	if len(s) > excerptMax {
		cut := excerptMax
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
