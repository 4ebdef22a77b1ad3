package registry

import (
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

// A stored document record gives back the canonical text byte for byte
// (encoding/json would otherwise escape <, > and & inside it).
func FuzzDocRecordRoundTrip(f *testing.F) {
	for _, s := range []string{`{"a":"<&>"}`, `{"revision":"r/1","s":["\u2028",1e21,-0]}`, `"x"`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := value.Decode([]byte(s), value.Limits{})
		if err != nil {
			return
		}
		canon, err := value.Canonical(v)
		if err != nil {
			return
		}
		in := Document{Revision: "r", Tasks: []TaskRef{{Task: "a", Version: "1"}}, Doc: []byte(canon)}
		data, err := encodeDoc(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeDoc(data)
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Doc) != canon || out.Revision != "r" || len(out.Tasks) != 1 {
			t.Fatalf("round trip of %s gave %+v", canon, out)
		}
	})
}
