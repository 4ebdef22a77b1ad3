package step

import (
	"encoding/json"
	"strconv"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/wire"
)

// encodeInvocation is json.Marshal(inv), byte for byte, without
// reflection: every invocation a dispatcher sends was marshalled through
// reflection, re-validating and compacting its input on the way. An
// invocation whose embedded JSON holds what encoding/json would rewrite
// (HTML characters, U+2028 and U+2029: value.JSText writes them as they
// are) goes through json.Marshal.
func encodeInvocation(inv *wire.Invocation) ([]byte, error) {
	if rewritten(inv.Input) || rewritten(inv.With) {
		return json.Marshal(inv)
	}
	n := 160 + len(inv.Run) + len(inv.Activation) + len(inv.State) + len(inv.Node) + len(inv.Task) + len(inv.Version) +
		len(inv.Input) + len(inv.With) + len(inv.Token) + len(inv.Reply)
	b := make([]byte, 0, n)
	b = append(b, `{"run":`...)
	b = value.AppendGoJSONString(b, inv.Run)
	b = append(b, `,"activation":`...)
	b = value.AppendGoJSONString(b, inv.Activation)
	b = append(b, `,"state":`...)
	b = value.AppendGoJSONString(b, inv.State)
	b = append(b, `,"node":`...)
	b = value.AppendGoJSONString(b, inv.Node)
	b = append(b, `,"task":`...)
	b = value.AppendGoJSONString(b, inv.Task)
	b = append(b, `,"version":`...)
	b = value.AppendGoJSONString(b, inv.Version)
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
	b = value.AppendGoJSONString(b, inv.Token)
	b = append(b, `,"reply":`...)
	b = value.AppendGoJSONString(b, inv.Reply)
	if inv.Deadline != 0 {
		var ok bool
		if b, ok = value.AppendGoJSONFloat(append(b, `,"deadline":`...), inv.Deadline); !ok {
			return json.Marshal(inv) // its error: NaN or an infinity
		}
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
