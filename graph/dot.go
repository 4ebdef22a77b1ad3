package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// Dot renders d as Graphviz dot text. Nested flows are clusters; an edge
// into or out of a flow attaches to the cluster (lhead/ltail) through the
// flow's start point.
func (d *Diagram) Dot() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(d.Title))
	b.WriteString("    graph [rankdir=TB, compound=true, fontname=\"monospace\", fontsize=11];\n")
	b.WriteString("    node [shape=box, style=\"rounded,filled\", fillcolor=\"white\", fontname=\"monospace\", fontsize=11];\n")
	b.WriteString("    edge [fontname=\"monospace\", fontsize=10];\n")
	clusters := map[string]string{}
	d.Walk(func(n *Node, _ int) {
		if n.Inner != nil {
			clusters[n.ID] = "cluster_" + strconv.Itoa(len(clusters))
		}
	})
	w := dotWriter{b: &b, clusters: clusters, dag: d.Kind == KindDAG}
	w.scope(&d.Root, "    ")
	b.WriteString("}\n")
	return b.String()
}

type dotWriter struct {
	b        *strings.Builder
	clusters map[string]string
	dag      bool
}

func (w dotWriter) scope(s *Scope, indent string) {
	for _, n := range s.Nodes {
		if n.Inner != nil {
			fmt.Fprintf(w.b, "%ssubgraph %s {\n", indent, dotQuote(w.clusters[n.ID]))
			label := n.Label
			if m := markText(n); m != "" {
				label += "\n" + m
			}
			fmt.Fprintf(w.b, "%s    label=%s; style=\"rounded%s\"; fillcolor=%s;\n", indent, dotQuote(label), filled(n), dotQuote(fillOf(n)))
			w.scope(n.Inner, indent+"    ")
			fmt.Fprintf(w.b, "%s}\n", indent)
			continue
		}
		fmt.Fprintf(w.b, "%s%s [%s];\n", indent, dotQuote(n.ID), w.nodeAttrs(n))
	}
	for _, e := range s.Edges {
		var attrs []string
		from, to := e.From, e.To
		if c, ok := w.clusters[to]; ok {
			to = to + "#start"
			attrs = append(attrs, "lhead="+dotQuote(c))
		}
		if c, ok := w.clusters[from]; ok {
			from = from + "#start"
			attrs = append(attrs, "ltail="+dotQuote(c))
		}
		if e.Label != "" {
			attrs = append(attrs, "label="+dotQuote(e.Label))
		}
		switch e.Kind {
		case EdgeCatch:
			attrs = append(attrs, "style=dashed", "color=\"#b91c1c\"")
		case EdgeAfter:
			attrs = append(attrs, "style=dashed")
		}
		fmt.Fprintf(w.b, "%s%s -> %s", indent, dotQuote(from), dotQuote(to))
		if len(attrs) > 0 {
			fmt.Fprintf(w.b, " [%s]", strings.Join(attrs, ", "))
		}
		w.b.WriteString(";\n")
	}
}

func (w dotWriter) nodeAttrs(n *Node) string {
	if n.Shape == ShapeStart {
		return "shape=point, width=0.15, label=\"\""
	}
	attrs := []string{"label=" + dotQuote(strings.Join(lines(n), "\n"))}
	switch n.Shape {
	case ShapeChoose:
		attrs = append(attrs, "shape=hexagon", "style=filled")
	case ShapeFinal:
		attrs = append(attrs, "peripheries=2")
	case ShapeWait:
		attrs = append(attrs, "style=\"rounded,dashed,filled\"")
	case ShapeInput, ShapeOutput:
		attrs = append(attrs, "shape=ellipse", "style=filled")
	case ShapeQuery, ShapeJSLT:
		attrs = append(attrs, "shape=hexagon", "style=filled")
	case ShapeConst:
		attrs = append(attrs, "shape=parallelogram", "style=filled")
	}
	if n.Status != StatusNone {
		attrs = append(attrs, "fillcolor="+dotQuote(fillOf(n)))
	}
	if n.Status == StatusActive || n.Status == StatusFailed || n.Status == StatusInvoked {
		attrs = append(attrs, "penwidth=3")
	}
	return strings.Join(attrs, ", ")
}

func fillOf(n *Node) string {
	if f, ok := fills[n.Status]; ok {
		return f
	}
	return "white"
}

func filled(n *Node) string {
	if n.Status != StatusNone {
		return ",filled"
	}
	return ""
}

// dotQuote is a dot double-quoted string: backslashes and quotes escaped
// (so that no \N-style escape is interpreted), new lines as \n.
func dotQuote(s string) string {
	parts := strings.Split(s, "\n")
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	for i, p := range parts {
		parts[i] = esc.Replace(clean(p))
	}
	return `"` + strings.Join(parts, `\n`) + `"`
}
