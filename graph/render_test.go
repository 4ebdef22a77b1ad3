package graph

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// hostileDoc names states, nodes and ports with markup, quotes, dot
// escapes and statement separators.
var hostileDoc = func() string {
	a, b := `<img src=x onerror="alert(1)">`, `"q" & \N; end # [x] {y} |z|`
	doc := map[string]any{
		"$workflow": "0.2", "revision": `r<script>`, "initial": a,
		"states": map[string]any{
			a: map[string]any{"work": map[string]any{"dag": map[string]any{
				"$dag": "0.1",
				"nodes": map[string]any{
					"in":       map[string]any{"kind": "input"},
					"<b>n</b>": map[string]any{"kind": "task", "run": "t", "version": "1"},
					"out":      map[string]any{"kind": "output"},
				},
				"edges": []any{
					map[string]any{"from": "in", "to": "<b>n</b>"},
					map[string]any{"from": "<b>n</b>", "to": "out", "port": "<p>\n"},
				},
			}}, "then": b},
			b:     map[string]any{"on": []any{map[string]any{"event": "go", "to": a}}, "after": map[string]any{"ms": 5, "to": "end"}},
			"end": map[string]any{"final": true},
		},
	}
	out, _ := json.Marshal(doc)
	return string(out)
}()

func TestMermaidText(t *testing.T) {
	t.Parallel()
	m := Statechart(orderWorkflow(t), &Marks{Active: []string{"/states/await-payment"}, Visits: map[string]int64{"/states/check": 1}}).Mermaid()
	for _, want := range []string{
		"stateDiagram-v2\n",
		"classDef active fill:#fde68a",
		`state "check (visits 1)" as s2`,
		"[*] --> s2\n",
		"s2 --> s11 : catch\n",
		"state s6 {\n",
		"        [*] --> s10\n",
		"s11 --> [*]\n",
		"class s1 active\n",
		"class s2 visited\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
	d, err := DAG(orderWorkflow(t), "/states/check", map[string]NodeMark{"price": {StatusInvoked, 2}})
	if err != nil {
		t.Fatal(err)
	}
	m = d.Mermaid()
	for _, want := range []string{"flowchart TB\n", `n3["price<br/>quote-price@1<br/>invoked, attempt 2"]`, `n1(["order<br/>input"])`, `n5{{"verdict<br/>query"}}`, `n4 -->|"stock"| n5`, "class n3 invoked"} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid DAG lacks %q:\n%s", want, m)
		}
	}
}

func TestDotText(t *testing.T) {
	t.Parallel()
	d := Statechart(orderWorkflow(t), &Marks{Active: []string{"/states/fulfil/flow/states/ship"}})
	out := d.Dot()
	for _, want := range []string{
		`digraph "order-1" {`,
		`subgraph "cluster_0" {`,
		`"/states/await-payment" -> "/states/fulfil#start" [lhead="cluster_0", label="payment [{\"$ge\":`,
		`"/states/fulfil#start" -> "/states/done" [ltail="cluster_0"];`,
		`"/states/fulfil/flow/states/ship" [label="ship\nship@1\nactive", fillcolor="#fde68a", penwidth=3];`,
		`"/states/check" -> "/states/rejected" [label="catch", style=dashed, color="#b91c1c"];`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dot lacks %q:\n%s", want, out)
		}
	}
}

// TestHostileNames: names from the document never escape their quoting
// in any format.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	wf := compile(t, hostileDoc)
	chart := Statechart(wf, &Marks{Active: []string{wf.Lowered.Initial}})
	dag, err := DAG(wf, wf.Lowered.Work[0], map[string]NodeMark{"<b>n</b>": {StatusDone, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*Diagram{chart, dag} {
		for _, label := range mermaidLabels(d.Mermaid()) {
			// Labels hold look-alikes, never the characters that could end
			// a label or statement, open markup or name an entity.
			if bare := strings.ReplaceAll(label, "<br/>", ""); strings.ContainsAny(bare, "<>\"#;&\n") {
				t.Errorf("mermaid label %q carries markup or syntax", label)
			}
		}
		checkDot(t, d.Dot())
		checkSVG(t, d.SVG(SVGOptions{Standalone: true}))
		checkSVG(t, d.SVG(SVGOptions{}))
	}
}

// mermaidLabels are the quoted labels and the texts after " : ".
func mermaidLabels(m string) []string {
	var out []string
	for _, line := range strings.Split(m, "\n") {
		if _, after, ok := strings.Cut(line, " : "); ok && !strings.Contains(line, "\"") {
			out = append(out, after)
		}
		parts := strings.Split(line, `"`)
		for i := 1; i < len(parts); i += 2 {
			out = append(out, parts[i])
		}
	}
	return out
}

// checkDot verifies every double-quoted string is closed on its line and
// that no backslash escape but \\, \" and \n appears.
func checkDot(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		in := false
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case c == '"':
				in = !in
			case c == '\\' && in:
				if i+1 >= len(line) || !strings.ContainsRune(`\"n`, rune(line[i+1])) {
					t.Errorf("dot line %q: escape \\%c", line, line[i+1])
				}
				i++
			}
		}
		if in {
			t.Errorf("dot line %q leaves a string open", line)
		}
	}
}

// svgElements and svgAttrs are all an SVG of ours may hold: no script,
// no foreign object, no event handler, no link.
var (
	svgElements = map[string]bool{"svg": true, "title": true, "style": true, "defs": true, "marker": true, "path": true, "g": true, "rect": true, "circle": true, "polygon": true, "text": true, "tspan": true}
	svgAttrs    = map[string]bool{
		"xmlns": true, "class": true, "viewBox": true, "width": true, "height": true, "role": true, "aria-label": true, "id": true,
		"refX": true, "refY": true, "markerWidth": true, "markerHeight": true, "orient": true, "d": true, "marker-end": true, "data-id": true,
		"x": true, "y": true, "rx": true, "cx": true, "cy": true, "r": true, "points": true, "transform": true,
	}
)

func checkSVG(t testing.TB, svg string) {
	t.Helper()
	if err := validSVG(svg); err != nil {
		t.Fatalf("%v in\n%s", err, svg)
	}
}

func validSVG(svg string) error {
	dec := xml.NewDecoder(strings.NewReader(svg))
	dec.Strict = true
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not XML: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			if !svgElements[tok.Name.Local] {
				return fmt.Errorf("element <%s>", tok.Name.Local)
			}
			for _, a := range tok.Attr {
				if !svgAttrs[a.Name.Local] {
					return fmt.Errorf("attribute %s on <%s>", a.Name.Local, tok.Name.Local)
				}
				if a.Name.Local == "marker-end" && !strings.HasPrefix(a.Value, "url(#") {
					return fmt.Errorf("marker-end %q", a.Value)
				}
			}
		case xml.EndElement:
			depth--
		case xml.ProcInst, xml.Directive:
			return fmt.Errorf("unexpected %T", tok)
		}
	}
	if depth != 0 {
		return fmt.Errorf("unbalanced elements")
	}
	return nil
}

// TestLayout checks what any drawing must satisfy on assorted graphs:
// finite coordinates, nodes inside the canvas and not overlapping, and
// every edge drawn exactly once.
func TestLayout(t *testing.T) {
	t.Parallel()
	wf := orderWorkflow(t)
	dag, err := DAG(wf, "/states/check", nil)
	if err != nil {
		t.Fatal(err)
	}
	graphs := map[string]*Diagram{
		"order":   Statechart(wf, nil),
		"dag":     dag,
		"hostile": Statechart(compile(t, hostileDoc), nil),
		"empty":   {},
		"loops": compile2(t, `{"$workflow":"0.2","revision":"r","initial":"a","states":{
			"a":{"on":[{"event":"again","to":"a"},{"event":"next","to":"b"}]},
			"b":{"limit":3,"choose":[{"guard":true,"to":"a"},{"guard":false,"to":"c"}],"otherwise":"b"},
			"c":{"final":true}}}`),
	}
	for name, d := range graphs {
		lay := layoutScope(&d.Root)
		checkLayout(t, name, &d.Root, lay)
		checkSVG(t, d.SVG(SVGOptions{}))
	}
}

func compile2(t *testing.T, doc string) *Diagram { return Statechart(compile(t, doc), nil) }

func checkLayout(t testing.TB, name string, s *Scope, lay *layout) {
	t.Helper()
	finite := func(v ...float64) bool {
		for _, f := range v {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false
			}
		}
		return true
	}
	if !finite(lay.w, lay.h) || lay.w < 0 || lay.h < 0 {
		t.Fatalf("%s: canvas %v×%v", name, lay.w, lay.h)
	}
	for i, a := range lay.boxes {
		if !finite(a.x, a.y, a.w, a.h) || a.x-a.w/2 < -0.01 || a.y-a.h/2 < -0.01 || a.x+a.w/2 > lay.w+0.01 || a.y+a.h/2 > lay.h+0.01 {
			t.Errorf("%s: %s at %.1f,%.1f (%.1f×%.1f) outside %.1f×%.1f", name, a.n.ID, a.x, a.y, a.w, a.h, lay.w, lay.h)
		}
		for _, b := range lay.boxes[i+1:] {
			if math.Abs(a.x-b.x) < (a.w+b.w)/2-0.01 && math.Abs(a.y-b.y) < (a.h+b.h)/2-0.01 {
				t.Errorf("%s: %s and %s overlap", name, a.n.ID, b.n.ID)
			}
		}
		if a.inner != nil {
			checkLayout(t, name+"/"+a.n.ID, a.n.Inner, a.inner)
		}
	}
	checkRoutes(t, name, s, lay)
	checkLabelsClear(t, name, lay)
	for _, r := range lay.routes {
		if len(r.pts) < 2 {
			t.Errorf("%s: edge %s -> %s has %d points", name, r.e.From, r.e.To, len(r.pts))
		}
		for _, p := range r.pts {
			if !finite(p.x, p.y) {
				t.Errorf("%s: edge %s -> %s at %v", name, r.e.From, r.e.To, p)
			}
		}
	}
}

// checkLabelsClear: no edge runs across an edge label's text, nor
// through a node other than its own ends.
func checkLabelsClear(t testing.TB, name string, lay *layout) {
	t.Helper()
	for _, r := range lay.routes {
		if !r.hasText {
			continue
		}
		x, y, w, h := r.labelBox()
		for _, o := range lay.routes {
			for _, p := range samples(o.pts) {
				if p.x > x+0.5 && p.x < x+w-0.5 && p.y > y+0.5 && p.y < y+h-0.5 {
					t.Errorf("%s: edge %s -> %s runs across the label %q of %s -> %s at %.1f,%.1f", name, o.e.From, o.e.To, r.e.Label, r.e.From, r.e.To, p.x, p.y)
					break
				}
			}
		}
	}
}

// samples are points along a route as curve draws it.
func samples(pts []point) []point {
	var out []point
	for i := 1; i < len(pts); i++ {
		p, q := pts[i-1], pts[i]
		my := (p.y + q.y) / 2
		for k := 0; k <= 32; k++ {
			u := float64(k) / 32
			a, b, c, d := (1-u)*(1-u)*(1-u), 3*(1-u)*(1-u)*u, 3*(1-u)*u*u, u*u*u
			out = append(out, point{a*p.x + b*p.x + c*q.x + d*q.x, a*p.y + b*my + c*my + d*q.y})
		}
	}
	return out
}

// checkRoutes: each edge between two nodes of the scope gets exactly one
// route, the one for that edge; a self loop gets none, as it is drawn
// beside its node.
func checkRoutes(t testing.TB, name string, s *Scope, lay *layout) {
	t.Helper()
	at := map[string]int{}
	for i, n := range s.Nodes {
		at[n.ID] = i
	}
	unrouted := map[Edge]int{}
	routed := 0
	for _, e := range s.Edges {
		f, okf := at[e.From]
		_, okt := at[e.To]
		switch {
		case !okf || !okt:
		case e.From == e.To:
			if !lay.boxes[f].hasSelf {
				t.Errorf("%s: self loop on %s not drawn", name, e.From)
			}
		default:
			unrouted[e]++
			routed++
		}
	}
	if len(lay.routes) != routed {
		t.Errorf("%s: %d routes for %d edges", name, len(lay.routes), routed)
	}
	for _, r := range lay.routes {
		if unrouted[r.e] == 0 {
			t.Errorf("%s: route %s -> %s %q is for no edge, or for one already routed", name, r.e.From, r.e.To, r.e.Label)
		}
		unrouted[r.e]--
	}
}

// FuzzLayout lays out arbitrary graphs: it must never panic, and the
// drawing must keep the layout's invariants and stay well-formed SVG.
func FuzzLayout(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 0, 2, 2}, "a")
	f.Add([]byte{0, 1, 0, 2, 0, 3, 3, 1, 1, 3, 2, 2}, `<x y="z">&`)
	f.Fuzz(func(t *testing.T, edges []byte, label string) {
		if len(edges) > 400 {
			return
		}
		n := 1 + len(edges)%17
		s := &Scope{}
		for i := range n {
			s.Nodes = append(s.Nodes, &Node{ID: fmt.Sprint(i), Label: strings.Repeat(label, i%3), Detail: label, Shape: ShapeWork, Visits: int64(i % 2)})
		}
		for i := 0; i+1 < len(edges); i += 2 {
			s.Edges = append(s.Edges, Edge{From: fmt.Sprint(int(edges[i]) % n), To: fmt.Sprint(int(edges[i+1]) % n), Label: label, Kind: EdgeThen})
		}
		s.Edges = mergeEdges(s.Edges)
		d := &Diagram{Kind: KindStatechart, Title: label, Root: *s}
		checkLayout(t, "fuzz", &d.Root, layoutScope(&d.Root))
		if err := validSVG(d.SVG(SVGOptions{})); err != nil {
			t.Fatal(err)
		}
	})
}
