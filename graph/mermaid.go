package graph

import (
	"fmt"
	"strings"
	"unicode"
)

// Mermaid renders d as Mermaid text: a stateDiagram-v2 for a statechart
// (nested flows as composite states), a flowchart for a DAG. Marked nodes
// get a class per status, defined at the top.
func (d *Diagram) Mermaid() string {
	var b strings.Builder
	id := ids(d, "s")
	if d.Kind == KindDAG {
		id = ids(d, "n")
		b.WriteString("flowchart TB\n")
	} else {
		b.WriteString("stateDiagram-v2\n")
	}
	used := map[Status]bool{}
	d.Walk(func(n *Node, _ int) { used[n.Status] = true })
	for _, s := range []Status{StatusActive, StatusVisited, StatusWaiting, StatusInvoked, StatusRetrying, StatusDone, StatusFailed} {
		if used[s] {
			fmt.Fprintf(&b, "    classDef %s fill:%s,stroke:#374151%s\n", s, fills[s], strokeWidth(s))
		}
	}
	if d.Kind == KindDAG {
		mermaidFlow(&b, &d.Root, id)
	} else {
		mermaidStates(&b, &d.Root, id, "    ")
	}
	d.Walk(func(n *Node, _ int) {
		if n.Status != StatusNone {
			fmt.Fprintf(&b, "    class %s %s\n", id[n.ID], n.Status)
		}
	})
	return b.String()
}

func strokeWidth(s Status) string {
	if s == StatusActive || s == StatusFailed || s == StatusInvoked {
		return ",stroke-width:3px"
	}
	return ""
}

func mermaidStates(b *strings.Builder, s *Scope, id map[string]string, indent string) {
	for _, n := range s.Nodes {
		if n.Shape == ShapeStart {
			continue
		}
		label := n.Label
		if m := markText(n); m != "" {
			label += " (" + m + ")"
		}
		fmt.Fprintf(b, "%sstate \"%s\" as %s\n", indent, mermaidText(label), id[n.ID])
		if n.Inner != nil {
			fmt.Fprintf(b, "%sstate %s {\n", indent, id[n.ID])
			mermaidStates(b, n.Inner, id, indent+"    ")
			fmt.Fprintf(b, "%s}\n", indent)
		} else if n.Detail != "" {
			fmt.Fprintf(b, "%s%s : %s\n", indent, id[n.ID], mermaidText(n.Detail))
		}
	}
	for _, e := range s.Edges {
		from := id[e.From]
		if e.Kind == EdgeInitial {
			from = "[*]"
		}
		fmt.Fprintf(b, "%s%s --> %s", indent, from, id[e.To])
		if e.Label != "" {
			fmt.Fprintf(b, " : %s", mermaidText(e.Label))
		}
		b.WriteString("\n")
	}
	for _, n := range s.Nodes {
		if n.Shape == ShapeFinal {
			fmt.Fprintf(b, "%s%s --> [*]\n", indent, id[n.ID])
		}
	}
}

// mermaidShapes are the flowchart brackets of each DAG node kind.
var mermaidShapes = map[Shape][2]string{
	ShapeInput:  {"([", "])"},
	ShapeOutput: {"([", "])"},
	ShapeTask:   {"[", "]"},
	ShapeQuery:  {"{{", "}}"},
	ShapeConst:  {"[/", "/]"},
	ShapeJSLT:   {"{{", "}}"},
}

func mermaidFlow(b *strings.Builder, s *Scope, id map[string]string) {
	for _, n := range s.Nodes {
		br, ok := mermaidShapes[n.Shape]
		if !ok {
			br = [2]string{"[", "]"}
		}
		parts := lines(n)
		for i := range parts {
			parts[i] = mermaidText(parts[i])
		}
		fmt.Fprintf(b, "    %s%s\"%s\"%s\n", id[n.ID], br[0], strings.Join(parts, "<br/>"), br[1])
	}
	for _, e := range s.Edges {
		if e.Label != "" {
			fmt.Fprintf(b, "    %s -->|\"%s\"| %s\n", id[e.From], mermaidText(e.Label), id[e.To])
		} else {
			fmt.Fprintf(b, "    %s --> %s\n", id[e.From], id[e.To])
		}
	}
}

// mermaidLook are the characters Mermaid would read as syntax or markup
// inside a label, and the look-alikes shown instead. Entity codes (#60;)
// are not used: Mermaid 11 leaves them undecoded in many labels.
var mermaidLook = strings.NewReplacer(
	`"`, "'", // ends a quoted label
	"<", "\u2039", ">", "\u203a", "&", "\uff06", // HTML in labels
	"#", "\uff03", // starts an entity code
	";", "\uff1b", // ends a statement
)

// mermaidText makes s safe inside any Mermaid label: nothing in it can
// end the label or the statement, open markup or name an entity.
func mermaidText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\uFFFD' || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, clean(s))
	return mermaidLook.Replace(s)
}
