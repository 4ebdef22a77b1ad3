package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// decoderDecode is Decode as it was: a json.Decoder and a check that
// nothing follows the value. Decode must accept, refuse and return what
// it does.
func decoderDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the first value")
	}
	return v, nil
}

func FuzzDecodeIsTheDecoder(f *testing.F) {
	for _, s := range []string{``, ` `, `1`, ` 1 `, `1 2`, `{} {}`, `{"a":1}}`, `[1,`, `"\u2028"`, `"\xff"`, `1e999`, `-0`, `{"a":{"a":null}}`, "\t[]\n", `nul`, `"a" x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := decoderDecode(data)
		got, err := Decode(data, Limits{})
		if errors.Is(err, ErrTooDeep) || errors.Is(err, ErrTooLarge) {
			return
		}
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, %v; the decoder gives %#v, %v", data, got, err, want, wantErr)
		}
	})
}

// BenchmarkDecode: a task's output as a dispatcher decodes it.
//
//	go test ./engine/value -run '^$' -bench Decode -benchmem
func BenchmarkDecode(b *testing.B) {
	data := []byte(`{"sku":"KB-42","qty":2,"customer":"ada","lines":[1,2.5,null,true]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
