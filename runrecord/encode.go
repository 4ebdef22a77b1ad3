package runrecord

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// appendRecord appends the record's JSON, byte for byte what
// encoding/json's Marshal writes for it, without reflection and without
// re-validating the embedded JSON (State, Outbox data): encoding/json
// compacts every json.RawMessage again, which cost a tenth of a
// dispatcher's CPU. Those bytes come from json.Marshal (the state, the
// rendered effects) or from a decoded record, so they are compact, valid
// and HTML-escaped already; they are copied as they are.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	b = append(b, `{"state":`...)
	b = appendRaw(b, r.State)
	if r.Status != nil {
		// wire.Status keeps encoding/json (a field added to it is never
		// lost here), but the step that announced it encoded it already.
		s := r.statusJSON
		if s == nil {
			var err error
			if s, err = json.Marshal(r.Status); err != nil {
				return nil, err
			}
		}
		b = append(b, `,"status":`...)
		b = append(b, s...)
	}
	if len(r.Outbox) > 0 {
		b = append(b, `,"outbox":[`...)
		for i := range r.Outbox {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendOutgoing(b, &r.Outbox[i])
		}
		b = append(b, ']')
	}
	if len(r.Applied) > 0 {
		b = append(b, `,"applied":[`...)
		for i, seq := range r.Applied {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, seq, 10)
		}
		b = append(b, ']')
	}
	if len(r.Rejected) > 0 {
		s, err := json.Marshal(r.Rejected)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"rejected":`...)
		b = append(b, s...)
	}
	if len(r.Ignored) > 0 {
		s, err := json.Marshal(r.Ignored)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"ignored":`...)
		b = append(b, s...)
	}
	if len(r.Order) > 0 {
		b = append(b, `,"order":[`...)
		for i, s := range r.Order {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendUint(b, s.From, 10)
			b = append(b, ',')
			b = strconv.AppendUint(b, s.To, 10)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	if r.Timers {
		b = append(b, `,"timers":true`...)
	}
	if r.DeadlineOnly {
		b = append(b, `,"deadlineOnly":true`...)
	}
	if r.Tracked {
		b = append(b, `,"tracked":true`...)
	}
	if len(r.Armed) > 0 {
		b = append(b, `,"armed":{`...)
		for i, id := range slices.Sorted(maps.Keys(r.Armed)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, id)
			b = append(b, ':')
			b = strconv.AppendInt(b, r.Armed[id], 10)
		}
		b = append(b, '}')
	}
	if r.Parent != nil {
		s, err := json.Marshal(r.Parent)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"parent":`...)
		b = append(b, s...)
	}
	if len(r.Children) > 0 {
		s, err := json.Marshal(r.Children)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"children":`...)
		b = append(b, s...)
	}
	if r.Priority != nil {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(*r.Priority), 10)
	}
	return append(b, '}'), nil
}

func appendOutgoing(b []byte, o *Outgoing) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, o.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, o.Kind)
	b = append(b, `,"subject":`...)
	b = appendString(b, o.Subject)
	if len(o.Header) > 0 {
		b = append(b, `,"header":{`...)
		var keys [8]string
		ks := keys[:0]
		for k := range o.Header {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for i, k := range ks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, o.Header[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"data":`...)
	b = appendRaw(b, o.Data)
	return append(b, '}')
}

// appendRaw writes embedded JSON; absent is null, as encoding/json has it
// (which refuses an empty non-nil one).
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendString writes s as encoding/json does (HTML-escaped). Names,
// subjects and ids are plain ASCII and are copied; anything else goes
// through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
