package query

import (
	"testing"

	"github.com/theory/jsonpath/spec"
)

// TestPathSyntaxError checks the walk's text against the reference's
// messages for representative strings; each want is what the
// reference's parseJSONPath threw for the string ("" when it parsed).
func TestPathSyntaxError(t *testing.T) {
	t.Parallel()
	tests := []struct{ src, want string }{
		{"", "Invalid JSONPath: empty query at position 0 in ''"},
		{"@.a", "Invalid JSONPath: query must start with '$' at position 0 in '@.a'"},
		{"$..", "Invalid JSONPath: expected member name at position 3 in '$..'"},
		{"$.", "Invalid JSONPath: expected member name at position 2 in '$.'"},
		{"$[", "Invalid JSONPath: expected a selector at position 2 in '$['"},
		{"$[]", "Invalid JSONPath: expected a selector at position 2 in '$[]'"},
		{"$.a ", "Invalid JSONPath: unexpected token at position 3 in '$.a '"},
		{"$. a", "Invalid JSONPath: expected member name at position 2 in '$. a'"},
		{"$.1a", "Invalid JSONPath: expected member name at position 2 in '$.1a'"},
		{"$['a", "Invalid JSONPath: unterminated string literal at position 4 in '$['a'"},
		{"$['\\x']", "Invalid JSONPath: invalid escape sequence at position 4 in '$['\\x']'"},
		{"$['\\u12g4']", "Invalid JSONPath: invalid unicode escape at position 7 in '$['\\u12g4']'"},
		{"$['\\ud800']", "Invalid JSONPath: lone surrogate in unicode escape at position 9 in '$['\\ud800']'"},
		{"$['\\ud800\\u0041']", "Invalid JSONPath: invalid low surrogate in unicode escape at position 15 in '$['\\ud800\\u0041']'"},
		{"$['\\udc00']", "Invalid JSONPath: lone surrogate in unicode escape at position 9 in '$['\\udc00']'"},
		{"$['\u0001']", "Invalid JSONPath: unescaped control character in string literal at position 3 in '$['\u0001']'"},
		{"$[01]", "Invalid JSONPath: leading zeros are not allowed at position 2 in '$[01]'"},
		{"$[-0]", "Invalid JSONPath: '-0' is not allowed as an index at position 2 in '$[-0]'"},
		{"$[9007199254740992]", "Invalid JSONPath: integer out of interoperable range at position 2 in '$[9007199254740992]'"},
		{"$[1:2:3:4]", "Invalid JSONPath: expected ',' or ']' at position 7 in '$[1:2:3:4]'"},
		{"$[?@ == 01]", "Invalid JSONPath: leading zeros are not allowed at position 8 in '$[?@ == 01]'"},
		{"$[?@ == 1.]", "Invalid JSONPath: expected digit after decimal point at position 10 in '$[?@ == 1.]'"},
		{"$[?@ == 1e]", "Invalid JSONPath: expected digit in exponent at position 10 in '$[?@ == 1e]'"},
		{"$[?@ == -]", "Invalid JSONPath: expected digit in number literal at position 9 in '$[?@ == -]'"},
		{"$[?1]", "Invalid JSONPath: a literal must be part of a comparison at position 3 in '$[?1]'"},
		{"$[?true]", "Invalid JSONPath: a literal must be part of a comparison at position 3 in '$[?true]'"},
		{"$[?!true]", "Invalid JSONPath: expected a test expression after ! at position 4 in '$[?!true]'"},
		{"$[?!xyz]", "Invalid JSONPath: expected a test expression after ! at position 4 in '$[?!xyz]'"},
		{"$[?xyz == 1]", "Invalid JSONPath: unexpected identifier 'xyz' at position 3 in '$[?xyz == 1]'"},
		{"$[?@.* == 1]", "Invalid JSONPath: a comparison requires a singular query at position 3 in '$[?@.* == 1]'"},
		{"$[?1 == @..a]", "Invalid JSONPath: a comparison requires a singular query at position 8 in '$[?1 == @..a]'"},
		{"$[?foo(@.a)]", "Invalid JSONPath: unknown function 'foo' at position 3 in '$[?foo(@.a)]'"},
		{"$[?length(@.a)]", "Invalid JSONPath: a function of type ValueType cannot be used as a test expression at position 3 in '$[?length(@.a)]'"},
		{"$[?!length(@.a)]", "Invalid JSONPath: a function of type ValueType cannot be used as a test expression at position 4 in '$[?!length(@.a)]'"},
		{"$[?match(@.a, 'x') == true]", "Invalid JSONPath: only functions of type ValueType can be compared at position 3 in '$[?match(@.a, 'x') == true]'"},
		{"$[?length()]", "Invalid JSONPath: function 'length' expects 1 argument(s), got 0 at position 3 in '$[?length()]'"},
		{"$[?length(@.*) == 1]", "Invalid JSONPath: argument 1 of 'length' requires a singular query at position 3 in '$[?length(@.*) == 1]'"},
		{"$[?count(1) == 1]", "Invalid JSONPath: argument 1 of 'count' must be a query (NodesType) at position 3 in '$[?count(1) == 1]'"},
		{"$[?length(count(@.*)) == 1]", ""},
		{"$[?match(@.a) ]", "Invalid JSONPath: function 'match' expects 2 argument(s), got 1 at position 3 in '$[?match(@.a) ]'"},
		{"$[?@.a = 1]", "Invalid JSONPath: expected '==' at position 7 in '$[?@.a = 1]'"},
		{"$[?(@.a]", "Invalid JSONPath: expected ')' at position 7 in '$[?(@.a]'"},
		{"$[?@.a &&]", "Invalid JSONPath: expected a filter expression at position 9 in '$[?@.a &&]'"},
		{"$[?length(!@.a) == 1]", "Invalid JSONPath: expected a function argument at position 10 in '$[?length(!@.a) == 1]'"},
		{"$[?@.a == xyz]", "Invalid JSONPath: unexpected identifier 'xyz' at position 10 in '$[?@.a == xyz]'"},
		{"$[?@.a == ]", "Invalid JSONPath: expected a comparable expression at position 10 in '$[?@.a == ]'"},
		{"$[?@.a == 1", "Invalid JSONPath: expected ',' or ']' at position 11 in '$[?@.a == 1'"},
		{"$.é[01]", "Invalid JSONPath: leading zeros are not allowed at position 4 in '$.é[01]'"},
		{"$['😀'][01]", "Invalid JSONPath: leading zeros are not allowed at position 8 in '$['😀'][01]'"},
		{"$.😀 x", "Invalid JSONPath: unexpected token at position 4 in '$.😀 x'"},
	}
	for _, tt := range tests {
		if _, got := walkPath(tt.src); got != tt.want {
			t.Errorf("walkPath(%q)\n got  %q\n want %q", tt.src, got, tt.want)
		}
	}
}

// TestPathStringEscapes checks the name each escape in a string
// literal stands for.
func TestPathStringEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct{ src, want string }{
		{`$['\b\f\n\r\t']`, "\b\f\n\r\t"},
		{`$['\/\\\'']`, `/\'`},
		{`$["\""]`, `"`},
		{`$['a\u0041\u00e9b']`, "aAéb"},
		{`$['\ud83d\ude00x']`, "😀x"},
		{`$['\uD83D\uDE00']`, "😀"},
		{`$['😀\u20AC']`, "😀€"},
	}
	for _, tt := range tests {
		w, msg := walkPath(tt.src)
		if msg != "" {
			t.Errorf("walkPath(%q): %s", tt.src, msg)
			continue
		}
		if got := w.segs[0].Selectors()[0]; got != spec.Name(tt.want) {
			t.Errorf("walkPath(%q) selects %#v, want %q", tt.src, got, tt.want)
		}
	}
}

// TestPathLenient checks queries the JSONPath library refused and the
// reference takes: blank space in a compared query's brackets, an
// integer past int64. Each want lists the items the reference's query selected.
func TestPathLenient(t *testing.T) {
	t.Parallel()
	data := mustJSON(t, `[{"a":123456789012345678901,"b":[5,7]},{"a":1,"b":[7,9]},{"a":2,"b":[1]}]`)
	tests := []struct{ src, want string }{
		{"$[?@.a == 123456789012345678901]", `[{"a":123456789012345680000,"b":[5,7]}]`},
		{"$[?@.a < 123456789012345678901].a", `[1,2]`},
		{"$[?@.b[\t-1] == 7].a", `[123456789012345680000]`},
		{"$[?$[ 0].a == @.a].a", `[123456789012345680000]`},
		{"$[?count(@.b [*]) == 2].a", `[123456789012345680000,1]`},
		{"$[? @.a==1 ]", `[{"a":1,"b":[7,9]}]`},
		// A wide literal followed by blank space (answers from the
		// reference's queryJSONPath).
		{"$[?@.a == 123456789012345678901 ]", `[{"a":123456789012345680000,"b":[5,7]}]`},
		{"$[?@.a == 123456789012345678901 || @.a == 123456789012345678902 ].b", `[[5,7]]`},
		{"$[?@.a < 123456789012345678901\t].a", `[1,2]`},
	}
	for _, tt := range tests {
		q, err := Compile(tt.src, Options{})
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		items, err := q.Items(data, nil)
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if got := show(items); got != tt.want {
			t.Errorf("%q selects %s, want %s", tt.src, got, tt.want)
		}
	}
}

// TestPathStricter checks that a query the library takes and the
// reference refuses is refused with the reference's message.
func TestPathStricter(t *testing.T) {
	t.Parallel()
	_, err := Compile("$[?!true]", Options{})
	const want = "JQ0004: '$[?!true]' is not a valid path: Invalid JSONPath: expected a test expression after ! at position 4 in '$[?!true]' at ''"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestPathMessages checks whole JQ0004 messages against the reference's
// compileJsonQuery: the query quoted as written, the detail quoting the
// path the reference parses (a variable's '$name' replaced by '$').
func TestPathMessages(t *testing.T) {
	t.Parallel()
	tests := []struct{ doc, want string }{
		{"$x.[", "JQ0004: '$x.[' is not a valid path: Invalid JSONPath: expected member name at position 2 in '$.[' at ''"},
		{"$x[?!true]", "JQ0004: '$x[?!true]' is not a valid path: Invalid JSONPath: expected a test expression after ! at position 4 in '$[?!true]' at ''"},
		{"$root..", "JQ0004: '$root..' is not a valid path: Invalid JSONPath: expected member name at position 3 in '$..' at ''"},
		{"$['😀'].a[?@ == 01]", "JQ0004: '$['😀'].a[?@ == 01]' is not a valid path: Invalid JSONPath: leading zeros are not allowed at position 16 in '$['😀'].a[?@ == 01]' at ''"},
		{"$x .a ", "JQ0004: '$x .a ' is not a valid path: Invalid JSONPath: unexpected token at position 4 in '$ .a ' at ''"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.doc, Options{})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: got %v\n want %s", tt.doc, err, tt.want)
		}
	}
}

// FuzzPathSyntax checks that the walk never panics, and that every
// query it takes selects from a document without a panic (a filter's
// function over nothing once panicked).
func FuzzPathSyntax(f *testing.F) {
	data := map[string]any{"a": []any{1.0, "x", map[string]any{"b": []any{true, nil}}}, "c": map[string]any{"d": 2.5}}
	for _, s := range []string{
		"$", "$..a[?@.b == 1 && length(@.c) > 2]", "$['\\ud83d\\ude00'][1:2:-1]", "$[?!match(@, 'a')]", "$[?@ == 1e5]", "$[01]",
		"$[?@ < 1e400]", "$[?@ >= -1e400 || @ <= 1e-400]", "$[?match(@, $.nope)]", "$[?@[?@ >= 'a']]", "$[?search(@, '^*')]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, msg := parseRFC(src)
		if msg != "" {
			return
		}
		p.selectInto(nil, data, data)
	})
}
