package statechart

import (
	"math"

	"github.com/jetflow/jetflow/engine/value"
)

// Restore validates a snapshot against the chart and returns its
// normalized, independent copy (leaves and history in tree order, timers
// by deadline then transition), as the reference's restore does. v is a
// JSON value (what encoding/json decodes into any) or a State. Every
// failure is JF2010.
func (c *Chart) Restore(v any) (State, error) {
	var s State
	switch x := v.(type) {
	case State:
		s = x
	case *State:
		if x == nil {
			return State{}, invalid("invalid statechart snapshot")
		}
		s = *x
	default:
		var err error
		if s, err = c.parseSnapshot(v); err != nil {
			return State{}, err
		}
	}
	w, err := c.load(s, make([]bool, len(c.nodes)), nil)
	if err != nil {
		return State{}, err
	}
	return c.state(&w), nil
}

var (
	snapshotMembers = []string{"active", "history", "timers", "serial", "time"}
	timerMembers    = []string{"transition", "at", "token"}
)

// parseSnapshot converts a JSON snapshot into a State, reporting the
// failures only the JSON form can have in the order the reference checks
// them: the snapshot's shape and configuration, then each history record,
// then each timer.
func (c *Chart) parseSnapshot(v any) (State, error) {
	m, ok := object(v)
	if !ok {
		return State{}, invalid("invalid statechart snapshot")
	}
	var s State
	rawActive, okActive := m["active"].([]any)
	s.Active, okActive = stringList(rawActive, okActive)
	hist, okHistory := object(m["history"])
	rawTimers, okTimers := m["timers"].([]any)
	serial, okSerial := safeInt(m["serial"])
	t, okTime := number(m["time"])
	if !okActive || !okHistory || !okTimers || !okSerial || serial < 0 || !okTime || !finite(t) {
		return State{}, invalid("invalid statechart snapshot")
	}
	if _, ok := c.legal(s.Active, -1, make([]bool, len(c.nodes)), nil); !ok {
		return State{}, invalid("invalid statechart snapshot")
	}
	s.Serial, s.Time = serial, t
	if len(hist) > 0 {
		s.History = make(map[string][]string, len(hist))
		scratch := make([]bool, len(c.nodes))
		// history records are judged in the order the snapshot holds them
		keys, _ := value.Ordered(m["history"])
		for _, id := range keys {
			list, err := c.parseHistory(id, hist[id], scratch)
			if err != nil {
				return State{}, err
			}
			s.History[id] = list
		}
	}
	if len(rawTimers) > 0 {
		s.Timers = make([]Timer, len(rawTimers))
		for i, raw := range rawTimers {
			tm, ok := parseTimer(raw, len(c.transitions))
			if !ok {
				return State{}, invalid("invalid timer record")
			}
			s.Timers[i] = tm
		}
	}
	s.Extra = extras(m, snapshotMembers)
	return s, nil
}

func (c *Chart) parseHistory(id string, raw any, scratch []bool) ([]string, error) {
	h, declared := c.ids[id]
	list, isArray := raw.([]any)
	if !declared || c.nodes[h].kind != kindHistory || !isArray || len(list) == 0 || !distinctValues(list) {
		return nil, invalid("invalid history record")
	}
	ids, ok := stringList(list, true)
	if !ok {
		if c.nodes[h].deep {
			return nil, invalid("illegal deep history configuration")
		}
		return nil, invalid("illegal shallow history configuration")
	}
	if _, err := c.historyEntry(id, ids, scratch); err != nil {
		return nil, err
	}
	return ids, nil
}

// object reads a JSON object, a map or a *value.Object (one that keeps
// the member order its text wrote).
func object(v any) (map[string]any, bool) {
	if o, ok := v.(*value.Object); ok {
		return o.Map(), true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

func parseTimer(raw any, transitions int) (Timer, bool) {
	m, ok := object(raw)
	if !ok {
		return Timer{}, false
	}
	tr, okTr := safeInt(m["transition"])
	at, okAt := number(m["at"])
	token, okToken := safeInt(m["token"])
	if !okTr || tr < 0 || tr >= int64(transitions) || !okAt || !okToken {
		return Timer{}, false
	}
	return Timer{Transition: int(tr), At: at, Token: token, Extra: extras(m, timerMembers)}, true
}

func stringList(list []any, ok bool) ([]string, bool) {
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, isString := x.(string)
		if !isString {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// distinctValues is the reference's Set-size test: primitives compare by
// value, arrays and objects by identity (so never equal here).
func distinctValues(list []any) bool {
	if len(list) > 16 {
		seen := make(map[any]bool, len(list))
		for _, x := range list {
			if f, ok := number(x); ok {
				x = f + 0 // -0 and 0 are one value
			}
			switch x.(type) {
			case nil, bool, string, float64:
				if seen[x] {
					return false
				}
				seen[x] = true
			}
		}
		return true
	}
	for i := range list {
		for j := i + 1; j < len(list); j++ {
			if samePrimitive(list[i], list[j]) {
				return false
			}
		}
	}
	return true
}

func samePrimitive(a, b any) bool {
	switch a.(type) {
	case nil:
		return b == nil
	case string, bool:
		return a == b
	}
	x, okA := number(a)
	y, okB := number(b)
	return okA && okB && x == y
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// safeInt accepts what Number.isSafeInteger accepts.
func safeInt(v any) (int64, bool) {
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > maxSafe {
		return 0, false
	}
	return int64(f), true
}

func extras(m map[string]any, known []string) map[string]any {
	var out map[string]any
	for k, v := range m {
		if member(known, k) {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = value.Plain(value.Clone(v))
	}
	return out
}
