package value

import "strings"

// IsJSSpace reports whether r is in ECMAScript's WhiteSpace or
// LineTerminator set, which String.prototype.trim removes. It differs
// from unicode.IsSpace: U+FEFF is in, U+0085 is out.
func IsJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// Blank reports whether s.trim() === "" in JavaScript, the reference's
// test of a blank name or version; strings.TrimSpace would call "\u0085"
// blank and "\ufeff" not.
func Blank(s string) bool { return strings.TrimFunc(s, IsJSSpace) == "" }
