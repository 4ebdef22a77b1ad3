package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// Format is a text format of a diagram.
type Format string

// Text formats.
const (
	FormatMermaid Format = "mermaid"
	FormatDot     Format = "dot"
	FormatSVG     Format = "svg"
)

// Formats lists the formats Render accepts.
var Formats = []Format{FormatMermaid, FormatDot, FormatSVG}

// Render writes d in format f; SVG is standalone (it carries its style).
func Render(d *Diagram, f Format) (string, error) {
	switch f {
	case FormatMermaid:
		return d.Mermaid(), nil
	case FormatDot:
		return d.Dot(), nil
	case FormatSVG:
		return d.SVG(SVGOptions{Standalone: true}), nil
	}
	return "", fmt.Errorf("graph: unknown format %q (want mermaid, dot or svg)", f)
}

// fills colour marked nodes in the text formats (the SVG uses classes).
var fills = map[Status]string{
	StatusActive:   "#fde68a",
	StatusVisited:  "#dbeafe",
	StatusWaiting:  "#f3f4f6",
	StatusInvoked:  "#fde68a",
	StatusRetrying: "#fed7aa",
	StatusDone:     "#bbf7d0",
	StatusFailed:   "#fecaca",
}

// markText says what a node's marks are, "" when it has none.
func markText(n *Node) string {
	var parts []string
	if n.Status != StatusNone && n.Status != StatusVisited {
		parts = append(parts, string(n.Status))
	}
	if n.Attempt > 0 {
		parts = append(parts, "attempt "+strconv.Itoa(n.Attempt))
	}
	if n.Visits > 0 {
		parts = append(parts, "visits "+strconv.FormatInt(n.Visits, 10))
	}
	return strings.Join(parts, ", ")
}

// lines are a node's label lines in the text formats.
func lines(n *Node) []string {
	out := []string{n.Label}
	if n.Detail != "" && n.Shape != ShapeFlow {
		out = append(out, n.Detail)
	}
	if m := markText(n); m != "" {
		out = append(out, m)
	}
	return out
}

// clean replaces what no text format may carry (control characters,
// invalid UTF-8) with U+FFFD.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffe || r == 0xffff {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// ids numbers the nodes of a diagram for formats whose identifiers are
// restricted: s0, s1, … in walk order.
func ids(d *Diagram, prefix string) map[string]string {
	m := map[string]string{}
	d.Walk(func(n *Node, _ int) { m[n.ID] = prefix + strconv.Itoa(len(m)) })
	return m
}
