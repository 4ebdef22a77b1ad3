package run

import (
	"encoding/json"
	"strconv"

	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// appendState appends st's stored form, byte for byte what
// json.Marshal(stored{...}) writes (encodeReflect), without reflection:
// encoding/json reached every field by reflection and copied every map
// key to sort it, a seventh of a step. The rare members (an error, a
// pause, held inputs, a termination) and any value that is not decoded
// JSON go through json.Marshal one by one, which writes the same bytes
// they have inside the whole; ok is false when Marshal would fail (NaN,
// the infinities), and the caller then takes encodeReflect's error.
func appendState(b []byte, st *State) (_ []byte, ok bool) {
	b = append(b, '{')
	if st.Workflow != "" {
		b = append(b, `"workflow":`...)
		b = value.AppendGoJSONString(b, st.Workflow)
		b = append(b, ',')
	}
	if st.Revision != "" {
		b = append(b, `"revision":`...)
		b = value.AppendGoJSONString(b, st.Revision)
		b = append(b, ',')
	}
	b = append(b, `"runId":`...)
	b = value.AppendGoJSONString(b, st.RunID)
	b = append(b, `,"status":`...)
	b = value.AppendGoJSONString(b, string(st.Status))
	if st.Error != nil {
		if b, ok = appendMarshal(append(b, `,"error":`...), st.Error); !ok {
			return b, false
		}
	}
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, st.Generation, 10)
	if b, ok = appendContext(append(b, `,"context":`...), &st.Context); !ok {
		return b, false
	}
	b = append(b, `,"pending":`...)
	if b, ok = appendPending(b, st.Pending); !ok {
		return b, false
	}
	if st.Work != nil {
		if b, ok = appendWork(append(b, `,"work":`...), st.Work); !ok {
			return b, false
		}
	}
	if len(st.Buffered) > 0 {
		b = append(b, `,"buffered":[`...)
		for i := range st.Buffered {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendEvent(b, &st.Buffered[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, st.Seq, 10)
	if st.Retries != 0 {
		b = strconv.AppendInt(append(b, `,"retries":`...), st.Retries, 10)
	}
	if b, ok = appendOptFloat(b, `,"deadline":`, st.Deadline); !ok {
		return b, false
	}
	if st.Paused != nil {
		if b, ok = appendMarshal(append(b, `,"paused":`...), st.Paused); !ok {
			return b, false
		}
	}
	if len(st.Held) > 0 {
		if b, ok = appendMarshal(append(b, `,"held":`...), st.Held); !ok {
			return b, false
		}
	}
	if st.Terminated != nil {
		if b, ok = appendMarshal(append(b, `,"terminated":`...), st.Terminated); !ok {
			return b, false
		}
	}
	if len(st.Kept) > 0 {
		if b, ok = value.AppendGoJSONMap(append(b, `,"kept":`...), st.Kept, appendKept); !ok {
			return b, false
		}
	}
	if st.Redrives != 0 {
		b = strconv.AppendInt(append(b, `,"redrives":`...), st.Redrives, 10)
	}
	if st.Resets != 0 {
		b = strconv.AppendInt(append(b, `,"resets":`...), st.Resets, 10)
	}
	if st.AttemptFloor != 0 {
		b = strconv.AppendInt(append(b, `,"attemptFloor":`...), st.AttemptFloor, 10)
	}
	if st.StartRevision != "" {
		b = value.AppendGoJSONString(append(b, `,"startRevision":`...), st.StartRevision)
	}
	if b, ok = appendControl(append(b, `,"control":`...), st); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendValue appends a JSON value of the state: decoded JSON by hand,
// anything else through json.Marshal.
func appendValue(b []byte, v any) ([]byte, bool) {
	if out, ok := value.AppendGoJSON(b, v); ok {
		return out, true
	}
	return appendMarshal(b, v)
}

// appendMarshal appends json.Marshal(v); ok is false when it fails.
func appendMarshal(b []byte, v any) ([]byte, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, data...), true
}

func appendContext(b []byte, c *Context) (_ []byte, ok bool) {
	if b, ok = appendValue(append(b, `{"input":`...), c.Input); !ok {
		return b, false
	}
	if b, ok = appendValue(append(b, `,"data":`...), c.Data); !ok {
		return b, false
	}
	b = append(b, `,"event":`...)
	if c.Event == nil {
		b = append(b, "null"...)
	} else if b, ok = appendEvent(b, c.Event); !ok {
		return b, false
	}
	if b, ok = value.AppendGoJSONMap(append(b, `,"results":`...), c.Results, appendValue); !ok {
		return b, false
	}
	if b, ok = value.AppendGoJSONMap(append(b, `,"visits":`...), c.Visits, appendValue); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendEvent writes what Event.MarshalJSON does: its map's keys sorted.
func appendEvent(b []byte, e *Event) (_ []byte, ok bool) {
	b = append(b, '{')
	if e.HasPayload {
		if b, ok = appendValue(append(b, `"payload":`...), e.Payload); !ok {
			return b, false
		}
		b = append(b, ',')
	}
	b = value.AppendGoJSONString(append(b, `"type":`...), e.Type)
	return append(b, '}'), true
}

func appendPending(b []byte, p *Pending) (_ []byte, ok bool) {
	if p == nil {
		return append(b, "null"...), true
	}
	b = value.AppendGoJSONString(append(b, `{"state":`...), p.State)
	b = strconv.AppendInt(append(b, `,"visit":`...), p.Visit, 10)
	if b, ok = appendValue(append(b, `,"input":`...), p.Input); !ok {
		return b, false
	}
	if b, ok = value.AppendGoJSONMap(append(b, `,"values":`...), p.Values, appendValue); !ok {
		return b, false
	}
	if len(p.Identity) > 0 {
		if b, ok = value.AppendGoJSONMap(append(b, `,"identity":`...), p.Identity, appendValue); !ok {
			return b, false
		}
	}
	if p.Result != nil {
		if b, ok = appendValue(append(b, `,"result":`...), p.Result); !ok {
			return b, false
		}
	}
	if p.HasResult {
		b = append(b, `,"hasResult":true`...)
	}
	return append(b, '}'), true
}

func appendWork(b []byte, w *Work) (_ []byte, ok bool) {
	b = value.AppendGoJSONString(append(b, `{"activation":`...), w.Activation)
	if b, ok = value.AppendGoJSONMap(append(b, `,"values":`...), w.Values, appendValue); !ok {
		return b, false
	}
	if b, ok = value.AppendGoJSONMap(append(b, `,"running":`...), w.Running, appendAttempt); !ok {
		return b, false
	}
	if len(w.Retries) > 0 {
		b, _ = value.AppendGoJSONMap(append(b, `,"retries":`...), w.Retries, func(b []byte, s string) ([]byte, bool) {
			return value.AppendGoJSONString(b, s), true
		})
	}
	if w.Base != 0 {
		b = strconv.AppendInt(append(b, `,"base":`...), int64(w.Base), 10)
	}
	if len(w.Ordered) > 0 {
		if b, ok = value.AppendGoJSONMap(append(b, `,"ordered":`...), w.Ordered, value.AppendGoJSONOrdered); !ok {
			return b, false
		}
	}
	if len(w.Marked) > 0 {
		if b, ok = value.AppendGoJSONMap(append(b, `,"marked":`...), w.Marked, value.AppendGoJSONOrdered); !ok {
			return b, false
		}
	}
	if n := w.NotJSON; n != nil {
		b = append(b, `,"notJSON":`...)
		m := len(b)
		for _, l := range []struct {
			name string
			at   map[string]query.Pointers
		}{{`,"values":`, n.Values}, {`,"ordered":`, n.Ordered}, {`,"marked":`, n.Marked}} {
			if len(l.at) > 0 {
				b, _ = value.AppendGoJSONMap(append(b, l.name...), l.at, appendPointers)
			}
		}
		b = closeMembers(b, m)
	}
	return append(b, '}'), true
}

func appendAttempt(b []byte, a *Attempt) (_ []byte, ok bool) {
	if a == nil {
		return append(b, "null"...), true
	}
	b = strconv.AppendInt(append(b, `{"attempt":`...), int64(a.Attempt), 10)
	if a.Waiting {
		b = append(b, `,"waiting":true`...)
	}
	if b, ok = appendOptFloat(b, `,"retryAt":`, a.RetryAt); !ok {
		return b, false
	}
	if a.Deferred != 0 {
		b = strconv.AppendInt(append(b, `,"deferred":`...), int64(a.Deferred), 10)
	}
	if b, ok = appendOptFloat(b, `,"deadline":`, a.Deadline); !ok {
		return b, false
	}
	if a.Paused != nil {
		if b, ok = appendMarshal(append(b, `,"paused":`...), a.Paused); !ok {
			return b, false
		}
	}
	if len(a.Held) > 0 {
		if b, ok = appendMarshal(append(b, `,"held":`...), a.Held); !ok {
			return b, false
		}
	}
	if a.Terminated != nil {
		if b, ok = appendMarshal(append(b, `,"terminated":`...), a.Terminated); !ok {
			return b, false
		}
	}
	if b, ok = appendOptFloat(b, `,"scheduled":`, a.Scheduled); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendOptFloat writes an omitempty float64 member (name is its
// separator, name and colon).
func appendOptFloat(b []byte, name string, v float64) ([]byte, bool) {
	if v == 0 {
		return b, true
	}
	return value.AppendGoJSONFloat(append(b, name...), v)
}

// appendControl writes controlJSON as Encode builds it.
func appendControl(b []byte, st *State) (_ []byte, ok bool) {
	c := &st.Control
	b = append(b, `{"active":`...)
	b = appendStrings(b, c.Active)
	b = append(b, `,"history":`...)
	if c.History == nil {
		b = append(b, "{}"...)
	} else {
		b, _ = value.AppendGoJSONMap(b, c.History, func(b []byte, s []string) ([]byte, bool) { return appendStrings(b, s), true })
	}
	b = append(b, `,"timers":[`...)
	for i, t := range c.Timers {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"transition":`...), int64(t.Transition), 10)
		if b, ok = value.AppendGoJSONFloat(append(b, `,"at":`...), t.At); !ok {
			return b, false
		}
		b = strconv.AppendInt(append(b, `,"token":`...), t.Token, 10)
		b = append(b, '}')
	}
	b = strconv.AppendInt(append(b, `],"serial":`...), c.Serial, 10)
	if b, ok = value.AppendGoJSONFloat(append(b, `,"time":`...), c.Time); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func appendStrings(b []byte, s []string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = value.AppendGoJSONString(b, v)
	}
	return append(b, ']')
}
