package graph

import (
	"math"
	"strings"
)

// Edge labels (guards, events, ports) are drawn whole: wrapped into lines
// of at most labelLineRunes, each merged branch (" | ") on lines of its
// own, up to maxLabelLines; only a longer label is cut, and its <title>
// keeps the whole text.
const (
	labelLineRunes = maxLabelRune + 8
	maxLabelLines  = 6
	labelLineH     = 13.0 // between the baselines of two label lines
)

// labelLines wraps an edge label for drawing.
func labelLines(s string) []string {
	var out []string
	for _, part := range strings.Split(s, " | ") {
		out = append(out, wrap(part, labelLineRunes)...)
	}
	if len(out) > maxLabelLines {
		out = out[:maxLabelLines]
		last := []rune(out[maxLabelLines-1])
		if len(last) >= labelLineRunes {
			last = last[:labelLineRunes-1]
		}
		out[maxLabelLines-1] = string(last) + "…"
	}
	return out
}

// wrap cuts s into lines of at most n runes, after a comma, colon or
// space in the second half of a line when there is one.
func wrap(s string, n int) []string {
	r := []rune(s)
	var out []string
	for len(r) > n {
		cut := n
		for i := n - 1; i >= n/2; i-- {
			if r[i] == ',' || r[i] == ':' || r[i] == ' ' {
				cut = i + 1
				break
			}
		}
		out = append(out, string(r[:cut]))
		r = r[cut:]
	}
	return append(out, string(r))
}

// labelSize is the width and height of a wrapped edge label.
func labelSize(lines []string) (w, h float64) {
	longest := 0
	for _, l := range lines {
		longest = max(longest, len([]rune(l)))
	}
	return float64(longest)*labelCharW + 6, labelH + float64(len(lines)-1)*labelLineH
}

// labelWidth is the width of a label drawn on one line beside a self
// loop.
func labelWidth(s string) float64 {
	return float64(len([]rune(Shorten(s, labelLineRunes))))*labelCharW + 6
}

// labelBox is the rectangle a route's label text covers: x, y its
// top-left corner.
func (r route) labelBox() (x, y, w, h float64) {
	w, h = labelSize(r.lines)
	return r.label.x, r.label.y - labelH/2 - 4, math.Max(0, w-6), h
}
