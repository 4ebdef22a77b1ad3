package subjects

import (
	"strings"
	"testing"
)

func TestIndexValueToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"c-7", "c-7"},
		{"", "="},
		{"a b", "=YSBi"},
		{"o.1", "=by4x"},
		{"*", "=Kg"},
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{strings.Repeat("x", 65), "#" + "pL1KfJnK3DH0Gs3h9i8uC2-6"},
	} {
		if got := IndexValueToken(c.in); got != c.want && !(strings.HasPrefix(c.want, "#") && strings.HasPrefix(got, "#")) {
			t.Errorf("IndexValueToken(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if IndexValueToken(strings.Repeat("x", 65)) == IndexValueToken(strings.Repeat("x", 66)) {
		t.Error("two long values share a token")
	}
}

func FuzzIndexValueToken(f *testing.F) {
	for _, s := range []string{"c-7", "", "a b", "o.1", "*", ">", strings.Repeat("é", 40)} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta := IndexValueToken(a)
		if ta == "" || strings.ContainsAny(ta, ". *>\t\r\n") || len(ta) > maxPlainValue+1 {
			t.Fatalf("IndexValueToken(%q) = %q: not one subject token", a, ta)
		}
		if a != b && len(a) <= maxEncodedValue && len(b) <= maxEncodedValue && ta == IndexValueToken(b) {
			t.Fatalf("%q and %q share the token %q", a, b, ta)
		}
	})
}

func TestCheckSearchName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{"customer": true, "order_id": true, "a.b": false, "": false, strings.Repeat("n", 33): false, "*": false} {
		if err := CheckSearchName(name); (err == nil) != ok {
			t.Errorf("CheckSearchName(%q) = %v", name, err)
		}
	}
}

func TestIndexSubjectBucket(t *testing.T) {
	t.Parallel()
	n := Must("")
	for _, s := range []string{
		n.IndexEntry("wf", "done", 1<<20+5, "r-1"),
		n.IndexStart("wf", "done", 1<<20+63, "r-1"),
		n.IndexAttr("customer", "c 42", "wf", "done", 1<<20, "r-1"),
	} {
		if b, ok := n.IndexSubjectBucket(s); !ok || b != 1<<(20-IndexBucketBits) {
			t.Errorf("IndexSubjectBucket(%q) = %d, %v; want %d", s, b, ok, 1<<(20-IndexBucketBits))
		}
	}
	for _, s := range []string{"", "run", n.IndexHead("r-1"), n.IndexEntryV1("wf", "done", "r-1"), n.IndexShapeMark(), "other.idx.u.wf.done.1.r-1", n.IndexAll()} {
		if b, ok := n.IndexSubjectBucket(s); ok {
			t.Errorf("IndexSubjectBucket(%q) = %d, true; want none", s, b)
		}
	}
}
