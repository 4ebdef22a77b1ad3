package statechart

import "strconv"

// TransitionKey names transition i (a Timer's Transition) by what it is
// rather than by its place in the chart: its source and target state
// ids, trigger, event and delay. Two revisions of a chart that keep a
// transition give it the same key wherever they list it. "" for an
// index out of range.
func (c *Chart) TransitionKey(i int) string {
	if i < 0 || i >= len(c.transitions) {
		return ""
	}
	t := c.transitions[i]
	to := ""
	if t.to >= 0 && t.to < len(c.nodes) {
		to = c.nodes[t.to].id
	}
	from := ""
	if t.from >= 0 && t.from < len(c.nodes) {
		from = c.nodes[t.from].id
	}
	return from + " -> " + to + " on " + strconv.Itoa(int(t.trigger)) + ":" + t.event + ":" + strconv.FormatFloat(t.after, 'g', -1, 64)
}

// TransitionByKey is the index of the first transition whose
// TransitionKey is k, or -1.
func (c *Chart) TransitionByKey(k string) int {
	for i := range c.transitions {
		if c.TransitionKey(i) == k {
			return i
		}
	}
	return -1
}
