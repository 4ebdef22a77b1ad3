package runrecord

import "bytes"

// StateBrief is what a run index entry reads of a stored run state (the
// form engine/run's Encode writes): the run id, the status, the active
// states, and the context's input and data as raw JSON.
type StateBrief struct {
	RunID, Status string
	Active        []string
	Input, Data   []byte
	// Results and Visits report that the context holds an object there,
	// as run.Decode requires.
	Results, Visits bool
}

// ReadStateBrief reads a StateBrief from state, skipping every other
// member unread. It reports false for anything it does not read exactly
// as encoding/json would (escaped or non-ASCII keys and strings, a key
// that differs from a wanted one only by case, values of another type),
// and the caller then decodes the state whole.
func ReadStateBrief(state []byte) (StateBrief, bool) {
	var b StateBrief
	p := recParser{d: state}
	ok := p.members(func(key []byte) bool {
		switch string(key) {
		case "runId":
			return p.string(&b.RunID)
		case "status":
			return p.string(&b.Status)
		case "context":
			return p.members(func(key []byte) bool {
				switch string(key) {
				case "input":
					return p.raw(&b.Input)
				case "data":
					return p.raw(&b.Data)
				case "results":
					return p.isObject(&b.Results)
				case "visits":
					return p.isObject(&b.Visits)
				}
				return p.other(key, "input", "data", "results", "visits")
			})
		case "control":
			return p.members(func(key []byte) bool {
				if string(key) == "active" {
					b.Active = b.Active[:0]
					return p.list(func() bool {
						s, ok := p.str()
						b.Active = append(b.Active, s)
						return ok
					})
				}
				return p.other(key, "active")
			})
		}
		return p.other(key, "runId", "status", "context", "control")
	})
	p.ws()
	return b, ok && p.i == len(p.d)
}

// members calls member with each key of an object (valid during the
// call), which must consume the key's value.
func (p *recParser) members(member func(key []byte) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		p.ws()
		k, ok := p.plain()
		if !ok || !p.byte(':') || !member(k) {
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// other skips the value of a member that is none of wanted; false when
// its key matches one of them but for case, which encoding/json would
// have read.
func (p *recParser) other(key []byte, wanted ...string) bool {
	for _, w := range wanted {
		if bytes.EqualFold(key, []byte(w)) {
			return false
		}
	}
	_, ok := p.value()
	return ok
}

func (p *recParser) string(s *string) bool {
	v, ok := p.str()
	*s = v
	return ok
}

func (p *recParser) raw(b *[]byte) bool {
	v, ok := p.value()
	*b = v
	return ok
}

func (p *recParser) isObject(is *bool) bool {
	v, ok := p.value()
	*is = ok && v[0] == '{'
	return ok
}
