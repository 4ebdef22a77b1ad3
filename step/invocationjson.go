package step

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/jetflow/jetflow/wire"
)

// encodeInvocation is json.Marshal(inv), byte for byte, without
// reflection: every invocation a dispatcher sends was marshalled through
// reflection, re-validating and compacting its input on the way. An
// invocation whose embedded JSON holds what encoding/json would rewrite
// (HTML characters, U+2028 and U+2029: value.JSText writes them as they
// are) or whose deadline is not written in plain notation goes through
// json.Marshal.
func encodeInvocation(inv *wire.Invocation) ([]byte, error) {
	if rewritten(inv.Input) || rewritten(inv.With) || inv.Deadline != 0 && !plainFloat(inv.Deadline) {
		return json.Marshal(inv)
	}
	n := 160 + len(inv.Run) + len(inv.Activation) + len(inv.State) + len(inv.Node) + len(inv.Task) + len(inv.Version) +
		len(inv.Input) + len(inv.With) + len(inv.Token) + len(inv.Reply)
	b := make([]byte, 0, n)
	b = append(b, `{"run":`...)
	b = appendJSONString(b, inv.Run)
	b = append(b, `,"activation":`...)
	b = appendJSONString(b, inv.Activation)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, inv.State)
	b = append(b, `,"node":`...)
	b = appendJSONString(b, inv.Node)
	b = append(b, `,"task":`...)
	b = appendJSONString(b, inv.Task)
	b = append(b, `,"version":`...)
	b = appendJSONString(b, inv.Version)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(inv.Attempt), 10)
	b = append(b, `,"input":`...)
	if len(inv.Input) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, inv.Input...)
	}
	if len(inv.With) > 0 {
		b = append(b, `,"with":`...)
		b = append(b, inv.With...)
	}
	b = append(b, `,"token":`...)
	b = appendJSONString(b, inv.Token)
	b = append(b, `,"reply":`...)
	b = appendJSONString(b, inv.Reply)
	if inv.Deadline != 0 {
		b = append(b, `,"deadline":`...)
		b = strconv.AppendFloat(b, inv.Deadline, 'f', -1, 64)
	}
	return append(b, '}'), nil
}

// rewritten reports whether encoding/json would change embedded JSON that
// is compact already: it escapes <, > and & and the line and paragraph
// separators (whose UTF-8 starts with 0xE2).
func rewritten(raw json.RawMessage) bool {
	for _, c := range raw {
		if c == '<' || c == '>' || c == '&' || c == 0xe2 {
			return true
		}
	}
	return false
}

// plainFloat reports whether encoding/json writes f in plain notation
// ('f' format), as strconv.AppendFloat(b, f, 'f', -1, 64) does.
func plainFloat(f float64) bool {
	a := math.Abs(f)
	return a >= 1e-6 && a < 1e21
}

// appendJSONString writes s as encoding/json does: HTML-escaped, invalid
// UTF-8 as U+FFFD, the line and paragraph separators escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
