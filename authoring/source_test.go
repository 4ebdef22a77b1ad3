package authoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

var positionCases = []struct {
	name, text, path string
	line, column     int
	found            bool
}{
	{"root", `{"a":1}`, "", 1, 1, true},
	{"member name", "{\n  \"a\": 1\n}", "/a", 2, 3, true},
	{"array element", "[1,\n [2, 3]]", "/1/1", 2, 6, true},
	{"escaped name", `{"a/b":{"~":true}}`, "/a~1b/~0", 1, 9, true},
	{"characters, not bytes", `{"é":"ü","x":1}`, "/x", 1, 10, true},
	{"absent member: its object", "{\"s\":\n {\"t\":{}}}", "/s/t/then", 2, 3, false},
	{"repeated member: the last", `{"a":1,"a":2}`, "/a", 1, 8, true},
}

func TestPosition(t *testing.T) {
	for _, c := range positionCases {
		t.Run(c.name, func(t *testing.T) {
			src, err := Scan([]byte(c.text))
			if err != nil {
				t.Fatal(err)
			}
			line, col, found := src.Position(c.path)
			if line != c.line || col != c.column || found != c.found {
				t.Errorf("Position(%q) = %d:%d %v, want %d:%d %v", c.path, line, col, found, c.line, c.column, c.found)
			}
		})
	}
}

var syntaxCases = []struct {
	name, text   string
	line, column int
	msg          string
}{
	{"missing comma", "{\n  \"a\": 1\n  \"b\": 2\n}", 3, 3, `invalid character '"': expected ',' or '}' after a member`},
	{"truncated", `{"$workflow":`, 1, 14, "unexpected end of JSON input"},
	{"bad literal", "[tru]", 1, 2, `invalid value "tru"`},
	{"missing value", `{"a":}`, 1, 6, `invalid character '}' looking for a value`},
	{"trailing text", "{} x", 1, 4, `invalid character 'x' after the top-level value`},
	{"unquoted name", "{a:1}", 1, 2, `invalid character 'a': expected a member name in double quotes`},
	{"control character", "[\"a\nb\"]", 1, 4, "invalid control character in a string"},
	{"empty", "", 1, 1, "unexpected end of JSON input"},
}

func TestSyntaxError(t *testing.T) {
	for _, c := range syntaxCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Scan([]byte(c.text))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Scan: %v, want a *SyntaxError", err)
			}
			if se.Line != c.line || se.Column != c.column || se.Msg != c.msg {
				t.Errorf("got %d:%d %q, want %d:%d %q", se.Line, se.Column, se.Msg, c.line, c.column, c.msg)
			}
		})
	}
}

// FuzzScan checks the scanner accepts exactly what encoding/json accepts
// and that every path it records holds a value in the decoded document.
func FuzzScan(f *testing.F) {
	for _, c := range positionCases {
		f.Add([]byte(c.text))
	}
	for _, c := range syntaxCases {
		f.Add([]byte(c.text))
	}
	f.Add([]byte(`{"a":[1,-2.5e3,"\u00e9",null,false,{"":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := Scan(data)
		if (err == nil) != json.Valid(data) {
			t.Fatalf("Scan error %v, json.Valid %v", err, json.Valid(data))
		}
		if err != nil {
			return
		}
		var doc any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for path := range src.values {
			if _, ok := lookup(doc, path); !ok {
				t.Fatalf("recorded path %q has no value", path)
			}
			if line, _, found := src.Position(path); !found || line < 1 {
				t.Fatalf("Position(%q) not found", path)
			}
		}
	})
}
