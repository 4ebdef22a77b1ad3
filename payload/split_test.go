package payload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/payload"
)

// joinFrom resolves references from the values a Split returned.
func joinFrom(t testing.TB, doc []byte, vals []payload.Value) []byte {
	t.Helper()
	byName := map[string][]byte{}
	for _, v := range vals {
		byName[v.Ref.Name] = v.Body
	}
	out, err := payload.Join(doc, func(r payload.Ref) ([]byte, error) {
		b, ok := byName[r.Name]
		if !ok {
			return nil, payload.ErrMissing
		}
		return b, nil
	})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	return out
}

// TestSplitKeepsLargeValuesByReference: each value above the threshold is
// a reference, the rest of the document stays, one value found twice is
// one object, and Join gives back the document byte for byte.
func TestSplitKeepsLargeValuesByReference(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 2000)
	many := make([]string, 100)
	for i := range many {
		many[i] = strings.Repeat("m", 50)
	}
	manyJSON, _ := json.Marshal(many)
	cases := []struct {
		name string
		doc  string
		refs int // distinct objects
		keep string
	}{
		{"small", `{"state":{"a":1},"status":"x"}`, 0, `"status":"x"`},
		{"one string", `{"state":{"input":"` + big + `","n":1},"status":"x"}`, 1, `"n":1`},
		{"twice", `{"state":{"input":"` + big + `"},"outbox":[{"data":{"input":"` + big + `"}}]}`, 1, `"outbox":[{"data":{"input":`},
		{"many small", `{"state":{"list":` + string(manyJSON) + `,"n":2}}`, 1, `"n":2`},
		{"spaced", "{ \"state\" : { \"input\" : \"" + big + "\" , \"n\" : [ 1 , 2 ] } }\n", 1, `"n" : [ 1 , 2 ]`},
		{"escaped", `{"s":"` + strings.Repeat(`\"\\\u00e9`, 300) + `","t":true}`, 1, `"t":true`},
		{"a value like a reference", `{"v":{"$jetflow.payload":{"name":"x/value/y","size":1,"digest":"z"}}}`, 1, `{"v":`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc := []byte(c.doc)
			out, vals, err := payload.Split(doc, "run-1", 1024)
			if err != nil {
				t.Fatal(err)
			}
			if len(vals) != c.refs {
				t.Fatalf("%d values by reference, want %d: %s", len(vals), c.refs, out)
			}
			if c.refs > 0 && len(out) > 1024 {
				t.Errorf("split document of %d bytes, want at most the threshold: %.300s", len(out), out)
			}
			if !bytes.Contains(out, []byte(c.keep)) {
				t.Errorf("split document lost %s: %.300s", c.keep, out)
			}
			if !json.Valid(out) {
				t.Errorf("split document is not JSON: %.300s", out)
			}
			for _, v := range vals {
				if !strings.HasPrefix(v.Ref.Name, "run-1/value/") || v.Ref.Digest != payload.Digest(v.Body) || v.Ref.Size != int64(len(v.Body)) {
					t.Errorf("reference %+v does not name its value", v.Ref)
				}
			}
			if back := joinFrom(t, out, vals); !bytes.Equal(back, doc) {
				t.Errorf("join differs from the document:\n got %.300s\nwant %.300s", back, doc)
			}
		})
	}
}

// TestSplitNamesFollowContent: splitting the same document again gives the
// same references, so a re-save uploads nothing new.
func TestSplitNamesFollowContent(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"a":"` + strings.Repeat("x", 5000) + `","b":"` + strings.Repeat("y", 5000) + `"}`)
	out1, v1, err := payload.Split(doc, "r", 1000)
	if err != nil {
		t.Fatal(err)
	}
	out2, v2, err := payload.Split(doc, "r", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out1, out2) || len(v1) != 2 || v1[0].Ref != v2[0].Ref || v1[1].Ref != v2[1].Ref {
		t.Fatalf("two splits differ: %s / %s", out1, out2)
	}
	refs, err := payload.Refs(out1)
	if err != nil || len(refs) != 2 || refs[0] != v1[0].Ref {
		t.Fatalf("Refs = %+v, %v", refs, err)
	}
}

// TestJoinRefusesABadReference: a value of the wrong size is a digest
// mismatch, a missing one is the resolver's error, and a reference that
// cannot be read is ErrBadRef.
func TestJoinRefusesABadReference(t *testing.T) {
	t.Parallel()
	out, _, err := payload.Split([]byte(`{"a":"`+strings.Repeat("x", 100)+`"}`), "r", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := payload.Join(out, func(payload.Ref) ([]byte, error) { return []byte(`"short"`), nil }); !errors.Is(err, payload.ErrDigest) {
		t.Errorf("a short value: %v, want ErrDigest", err)
	}
	if _, err := payload.Join(out, func(payload.Ref) ([]byte, error) { return nil, payload.ErrMissing }); !errors.Is(err, payload.ErrMissing) {
		t.Errorf("a missing value: %v, want ErrMissing", err)
	}
	if _, err := payload.Join([]byte(`{"a":{"$jetflow.payload":{"size":3}}}`), nil); !errors.Is(err, payload.ErrBadRef) {
		t.Errorf("a reference without a name: %v, want ErrBadRef", err)
	}
}

// TestSplitSmallDocumentAllocatesNothing: the path every small run record
// takes, on every save and load, costs no allocation.
func TestSplitSmallDocumentAllocatesNothing(t *testing.T) {
	doc := []byte(`{"state":{"input":{"sku":"KB-42","qty":2}},"status":{"run":"o-1","status":"running"},"applied":[1,2,3]}`)
	allocs := testing.AllocsPerRun(100, func() {
		out, vals, err := payload.Split(doc, "o-1", 512<<10)
		if err != nil || len(vals) != 0 || len(out) != len(doc) {
			t.Fatal("split a small document")
		}
		if back, err := payload.Join(doc, nil); err != nil || len(back) != len(doc) {
			t.Fatal("join a small document")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations for a small document, want 0", allocs)
	}
}

func BenchmarkSplitSmall(b *testing.B) {
	doc := []byte(`{"state":{"input":{"sku":"KB-42","qty":2},"data":{"stock":{"ok":true},"price":{"total":59.98}}},"status":{"run":"o-1","status":"running"},"applied":[1,2,3],"order":[[1,3]]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := payload.Split(doc, "o-1", 512<<10); err != nil {
			b.Fatal(err)
		}
		if _, err := payload.Join(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzSplitJoin(f *testing.F) {
	f.Add([]byte(`{"a":"xxxxxxxxxxxxxxxxxxxx","b":[1,2,3,{"c":"yyyyyyyyyyyyyyyyyyyyyyy"}]}`), 8)
	f.Add([]byte(`{"v":{"$jetflow.payload":{"name":"x","size":1,"digest":"z"}}}`), 1000)
	f.Add([]byte(` [ "a" , { "b" : null } ] `), 3)
	f.Fuzz(func(t *testing.T, doc []byte, threshold int) {
		if !json.Valid(doc) || threshold < 0 {
			return
		}
		out, vals, err := payload.Split(doc, "r", threshold)
		if err != nil {
			t.Fatalf("split valid JSON: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("split of %q is not JSON: %q", doc, out)
		}
		if back := joinFrom(t, out, vals); !bytes.Equal(back, doc) {
			t.Fatalf("join of split of %q is %q", doc, back)
		}
	})
}
