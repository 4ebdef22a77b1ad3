package runrecord

import (
	"encoding/json"
	"fmt"
)

// Span stands for the inputs of one run whose stream sequences lie in
// From..To (inclusive), taken in stream order. In JSON it is [From, To].
type Span struct {
	From, To uint64
}

// MarshalJSON writes the span as a two-element array.
func (s Span) MarshalJSON() ([]byte, error) { return json.Marshal([2]uint64{s.From, s.To}) }

// UnmarshalJSON reads a span written by MarshalJSON.
func (s *Span) UnmarshalJSON(data []byte) error {
	var a [2]uint64
	if err := json.Unmarshal(data, &a); err != nil {
		return fmt.Errorf("span: %w", err)
	}
	if a[0] > a[1] {
		return fmt.Errorf("span [%d, %d] ends before it starts", a[0], a[1])
	}
	s.From, s.To = a[0], a[1]
	return nil
}

// Order is the order in which a run's inputs were applied or rejected:
// the run's inputs in each span, span after span. Inputs nearly always
// apply in stream order and the whole history is one span. Competing
// dispatchers can apply one late (a lost compare-and-swap reapplied on
// the winner's state, an input that came before its run's start, a
// redelivery after a failure); the late input then gets a span of its
// own and is cut out of the span that covered it. A replay follows this
// order, so it rebuilds the state the dispatchers saved even then.
type Order []Span

// First is the sequence of the first input the run took (its start), 0
// when it took none.
func (o Order) First() uint64 {
	if len(o) == 0 {
		return 0
	}
	return o[0].From
}

// max is the highest sequence the order names.
func (o Order) max() uint64 {
	var m uint64
	for _, s := range o {
		m = max(m, s.To)
	}
	return m
}

// Add returns the order after the input at seq; o is left unchanged
// (cached records are shared).
func (o Order) Add(seq uint64) Order {
	m := o.max()
	if len(o) > 0 && seq > m {
		if last := o[len(o)-1]; last.To == m {
			out := append(Order(nil), o...)
			out[len(out)-1].To = seq
			return out
		}
	}
	out := make(Order, 0, len(o)+2)
	for _, s := range o {
		if s.From > seq || seq > s.To {
			out = append(out, s)
			continue
		}
		// Late: cut seq out of the span that claimed it.
		if s.From < seq {
			out = append(out, Span{s.From, seq - 1})
		}
		if seq < s.To {
			out = append(out, Span{seq + 1, s.To})
		}
	}
	return append(out, Span{seq, seq})
}
