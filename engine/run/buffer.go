package run

import (
	"strconv"

	"github.com/jetflow/jetflow/engine/value"
)

// The reference takes one event per call and, while a call runs, refuses
// another (JF2014); a fleet run instead holds the events that arrive
// while it works and hands them to its next wait. Those events live in
// the run's state, so they are bounded: otherwise any publisher allowed
// to send a run events could grow its state without limit.

func (r *reducer) event(ev *Event) error {
	if ev == nil || ev.Type == "" {
		return reject("an event needs a nonblank type")
	}
	if r.st.Status != StatusWaiting {
		if err := r.roomFor(ev); err != nil {
			return err
		}
	}
	e := *ev
	e.Payload = value.Clone(e.Payload)
	r.st.Buffered = append(r.st.Buffered, e)
	if r.st.Status != StatusWaiting {
		return nil // delivered to the next wait the run reaches
	}
	return r.wakeUp()
}

// roomFor rejects an event that would take the buffered events past
// Options.MaxBuffered or Options.MaxBufferedBytes.
func (r *reducer) roomFor(ev *Event) error {
	limit, maxBytes := r.bufferLimits()
	if len(r.st.Buffered) >= limit {
		return reject("run %q is not waiting and already holds %d events for its next wait, the limit (MaxBuffered); event %q is refused",
			r.st.RunID, len(r.st.Buffered), ev.Type)
	}
	size := eventSize(ev)
	for i := range r.st.Buffered {
		size += eventSize(&r.st.Buffered[i])
	}
	if size > maxBytes {
		return reject("run %q is not waiting, and event %q would take the events it holds for its next wait to %d bytes, more than the limit of %d (MaxBufferedBytes)",
			r.st.RunID, ev.Type, size, maxBytes)
	}
	return nil
}

// eventSize is about the size of an event's JSON: its type and payload.
func eventSize(e *Event) int { return len(e.Type) + jsonSize(e.Payload) }

// jsonSize is about the length of v's JSON text, computed without
// writing it: a string counts its bytes and quotes, not its escapes.
func jsonSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		if x {
			return 4
		}
		return 5
	case float64:
		var buf [32]byte
		return len(strconv.AppendFloat(buf[:0], x, 'g', -1, 64))
	case string:
		return len(x) + 2
	case []any:
		n := 2 + max(len(x)-1, 0) // brackets and commas
		for _, e := range x {
			n += jsonSize(e)
		}
		return n
	case map[string]any:
		n := 2 + max(len(x)-1, 0)
		for k, e := range x { // a sum: the order cannot show
			n += len(k) + 3 + jsonSize(e)
		}
		return n
	case *value.Object:
		n := 2 + max(x.Len()-1, 0)
		for i := range x.Len() {
			k, e := x.At(i)
			n += len(k) + 3 + jsonSize(e)
		}
		return n
	}
	return 0
}

// bufferLimits are the run's bounds on what it keeps for later (buffered
// events, and a paused run's held inputs with them): Options.MaxBuffered
// and Options.MaxBufferedBytes, or their defaults.
func (r *reducer) bufferLimits() (count, bytes int) {
	count, bytes = r.opts.MaxBuffered, r.opts.MaxBufferedBytes
	if count <= 0 {
		count = DefaultMaxBuffered
	}
	if bytes <= 0 {
		bytes = DefaultMaxBufferedBytes
	}
	return count, bytes
}
