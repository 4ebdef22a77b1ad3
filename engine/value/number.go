package value

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// ToNumber is JavaScript's ToNumber over a JSON value: null is 0, a
// boolean 0 or 1, a string StringToNumber, an array the number its text
// reads as, an object NaN.
func ToNumber(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case nil:
		return 0
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		return StringToNumber(x)
	case []any:
		switch len(x) {
		case 0:
			return 0
		case 1:
			if s, ok := ItemString(x[0]); ok {
				return StringToNumber(s)
			}
		}
	}
	return math.NaN()
}

// ItemString is String(item) for an array item that is a simple value:
// how JavaScript writes it when it joins an array into text.
func ItemString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case float64:
		return NumberString(x), true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

// StringToNumber is JavaScript's StringToNumber: trimmed, empty is 0, decimal with an
// optional sign and Infinity, or 0x/0o/0b integers.
func StringToNumber(s string) float64 {
	s = strings.TrimFunc(s, IsJSSpace)
	if s == "" {
		return 0
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			n, err := strconv.ParseUint(s[2:], base, 64)
			if err != nil {
				return math.NaN()
			}
			return float64(n)
		}
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return math.NaN()
	}
	if body == "Infinity" {
		if s[0] == '-' {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return math.NaN()
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN()
	}
	return f
}
