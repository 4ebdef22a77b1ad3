package graph

import (
	"fmt"
	"html"
	"strconv"
	"strings"
)

// SVGOptions tune SVG.
type SVGOptions struct {
	// Standalone adds a <style> element so that the file renders on its
	// own. The console leaves it out and styles diagrams with Style from
	// its own stylesheet (its content security policy refuses inline
	// styles). Default false.
	Standalone bool
	// IDPrefix prefixes the ids the SVG defines (its arrow marker) so that
	// several diagrams can share a page. Default "jf".
	IDPrefix string
}

// Style is the CSS of the SVG diagrams: shapes by class, marked nodes by
// status.
const Style = `
.jf-diagram { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; }
.jf-shape { fill: #ffffff; stroke: #6b7280; stroke-width: 1.2; }
.jf-cluster > .jf-shape { fill: #f9fafb; stroke-dasharray: none; }
.jf-wait > .jf-shape { stroke-dasharray: 5 3; }
.jf-final > .jf-inner { fill: none; stroke: #6b7280; stroke-width: 1; }
.jf-start > .jf-shape { fill: #374151; stroke: none; }
.jf-label { fill: #111827; text-anchor: middle; }
.jf-cluster-label { fill: #111827; font-weight: bold; }
.jf-detail { fill: #4b5563; font-size: 11px; text-anchor: middle; }
.jf-edge { fill: none; stroke: #6b7280; stroke-width: 1.2; }
.jf-edge.jf-catch { stroke: #b91c1c; stroke-dasharray: 4 3; }
.jf-edge.jf-after { stroke-dasharray: 4 3; }
.jf-edge-label { fill: #374151; font-size: 11px; }
.jf-arrowhead { fill: #6b7280; }
.jf-badge > circle { fill: #1f2937; }
.jf-badge > text { fill: #ffffff; font-size: 10px; text-anchor: middle; }
.jf-visited > .jf-shape { fill: #dbeafe; stroke: #1d4ed8; }
.jf-active > .jf-shape { fill: #fde68a; stroke: #b45309; stroke-width: 3; }
.jf-failed > .jf-shape { fill: #fecaca; stroke: #b91c1c; stroke-width: 3; }
.jf-waiting > .jf-shape { fill: #f3f4f6; }
.jf-invoked > .jf-shape { fill: #fde68a; stroke: #b45309; stroke-width: 2.5; }
.jf-retrying > .jf-shape { fill: #fed7aa; stroke: #c2410c; stroke-width: 2.5; }
.jf-done > .jf-shape { fill: #bbf7d0; stroke: #15803d; }
`

// SVG renders d laid out top to bottom. Every text is escaped; ids and
// classes derive from the diagram's own names only through escaping.
func (d *Diagram) SVG(o SVGOptions) string {
	if o.IDPrefix == "" {
		o.IDPrefix = "jf"
	}
	lay := layoutScope(&d.Root)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="jf-diagram jf-%s" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`,
		d.Kind, num(lay.w), num(lay.h), num(lay.w), num(lay.h), esc(d.Title))
	fmt.Fprintf(&b, "<title>%s</title>", esc(d.Title))
	if o.Standalone {
		b.WriteString("<style>" + Style + "</style>")
	}
	arrow := esc(o.IDPrefix) + "-arrow"
	fmt.Fprintf(&b, `<defs><marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path class="jf-arrowhead" d="M0,0L10,5L0,10z"/></marker></defs>`, arrow)
	svgScope(&b, lay, arrow)
	b.WriteString("</svg>")
	return b.String()
}

func svgScope(b *strings.Builder, lay *layout, arrow string) {
	for _, r := range lay.routes {
		fmt.Fprintf(b, `<path class="jf-edge jf-%s" d="%s" marker-end="url(#%s)"/>`, r.e.Kind, curve(r.pts), arrow)
		if r.hasText {
			fmt.Fprintf(b, `<text class="jf-edge-label" x="%s" y="%s"><title>%s</title>`, num(r.label.x), num(r.label.y), esc(r.e.Label))
			for i, line := range r.lines {
				fmt.Fprintf(b, `<tspan x="%s" y="%s">%s</tspan>`, num(r.label.x), num(r.label.y+float64(i)*labelLineH), esc(line))
			}
			b.WriteString("</text>")
		}
	}
	for _, bx := range lay.boxes {
		svgNode(b, bx, arrow)
	}
}

// curve joins the points with cubic segments that leave and arrive
// vertically.
func curve(pts []point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%s,%s", num(pts[0].x), num(pts[0].y))
	for i := 1; i < len(pts); i++ {
		p, q := pts[i-1], pts[i]
		my := (p.y + q.y) / 2
		fmt.Fprintf(&b, "C%s,%s %s,%s %s,%s", num(p.x), num(my), num(q.x), num(my), num(q.x), num(q.y))
	}
	return b.String()
}

func svgNode(b *strings.Builder, bx *box, arrow string) {
	n := bx.n
	classes := "jf-node jf-" + string(n.Shape)
	if n.Inner != nil {
		classes += " jf-cluster"
	}
	if n.Status != StatusNone {
		classes += " jf-" + string(n.Status)
	}
	fmt.Fprintf(b, `<g class="%s" data-id="%s">`, classes, esc(n.ID))
	tip := strings.Join(lines(n), " · ")
	if n.Shape == ShapeStart {
		tip = "initial"
	}
	fmt.Fprintf(b, "<title>%s</title>", esc(tip))
	x0, y0 := bx.x-bx.w/2, bx.y-bx.h/2
	switch {
	case n.Shape == ShapeStart:
		fmt.Fprintf(b, `<circle class="jf-shape" cx="%s" cy="%s" r="6"/>`, num(bx.x), num(bx.y))
	case n.Inner != nil:
		fmt.Fprintf(b, `<rect class="jf-shape" x="%s" y="%s" width="%s" height="%s" rx="8"/>`, num(x0), num(y0), num(bx.w), num(bx.h))
		fmt.Fprintf(b, `<text class="jf-cluster-label" x="%s" y="%s">%s</text>`, num(x0+10), num(y0+17), esc(Shorten(n.Label, maxLabelRune)))
		fmt.Fprintf(b, `<g transform="translate(%s,%s)">`, num(x0+(bx.w-bx.inner.w)/2), num(y0+clusterTitle-margin))
		svgScope(b, bx.inner, arrow)
		b.WriteString("</g>")
	default:
		svgShape(b, n.Shape, x0, y0, bx.w, bx.h)
		ty := bx.y + 4
		if n.Detail != "" {
			ty = bx.y - 3
			fmt.Fprintf(b, `<text class="jf-detail" x="%s" y="%s">%s</text>`, num(bx.x), num(ty+lineH-1), esc(Shorten(n.Detail, maxLabelRune+4)))
		}
		fmt.Fprintf(b, `<text class="jf-label" x="%s" y="%s">%s</text>`, num(bx.x), num(ty), esc(Shorten(n.Label, maxLabelRune)))
	}
	if bx.hasSelf {
		right, h := bx.x+bx.w/2, bx.h
		fmt.Fprintf(b, `<path class="jf-edge" d="M%s,%sC%s,%s %s,%s %s,%s" marker-end="url(#%s)"/>`,
			num(right), num(bx.y-h/4), num(right+26), num(bx.y-h/2-6), num(right+26), num(bx.y+h/2+6), num(right), num(bx.y+h/4), arrow)
		if bx.selfLabel != "" {
			fmt.Fprintf(b, `<text class="jf-edge-label" x="%s" y="%s">%s</text>`, num(right+28), num(bx.y+4), esc(Shorten(bx.selfLabel, labelLineRunes)))
		}
	}
	badge := ""
	switch {
	case n.Attempt > 0:
		badge = "#" + strconv.Itoa(n.Attempt)
	case n.Visits > 0:
		badge = strconv.FormatInt(n.Visits, 10)
	}
	if badge != "" && n.Shape != ShapeStart {
		r := 8.0 + 2.5*float64(max(0, len(badge)-2))
		cx, cy := x0+bx.w-2, y0+2
		fmt.Fprintf(b, `<g class="jf-badge"><circle cx="%s" cy="%s" r="%s"/><text x="%s" y="%s">%s</text></g>`,
			num(cx), num(cy), num(r), num(cx), num(cy+3.5), esc(badge))
	}
	b.WriteString("</g>")
}

func svgShape(b *strings.Builder, s Shape, x, y, w, h float64) {
	switch s {
	case ShapeChoose, ShapeQuery, ShapeJSLT:
		k := h / 2
		fmt.Fprintf(b, `<polygon class="jf-shape" points="%s,%s %s,%s %s,%s %s,%s %s,%s %s,%s"/>`,
			num(x), num(y+k), num(x+k), num(y), num(x+w-k), num(y), num(x+w), num(y+k), num(x+w-k), num(y+h), num(x+k), num(y+h))
	case ShapeConst:
		k := 8.0
		fmt.Fprintf(b, `<polygon class="jf-shape" points="%s,%s %s,%s %s,%s %s,%s"/>`,
			num(x+k), num(y), num(x+w), num(y), num(x+w-k), num(y+h), num(x), num(y+h))
	case ShapeInput, ShapeOutput:
		fmt.Fprintf(b, `<rect class="jf-shape" x="%s" y="%s" width="%s" height="%s" rx="%s"/>`, num(x), num(y), num(w), num(h), num(h/2))
	case ShapeFinal:
		fmt.Fprintf(b, `<rect class="jf-shape" x="%s" y="%s" width="%s" height="%s" rx="6"/>`, num(x), num(y), num(w), num(h))
		fmt.Fprintf(b, `<rect class="jf-inner" x="%s" y="%s" width="%s" height="%s" rx="4"/>`, num(x+3), num(y+3), num(w-6), num(h-6))
	case ShapeTask:
		fmt.Fprintf(b, `<rect class="jf-shape" x="%s" y="%s" width="%s" height="%s" rx="3"/>`, num(x), num(y), num(w), num(h))
	default:
		fmt.Fprintf(b, `<rect class="jf-shape" x="%s" y="%s" width="%s" height="%s" rx="6"/>`, num(x), num(y), num(w), num(h))
	}
}

// esc escapes text and attribute values, and replaces characters XML
// cannot carry, so that a hostile name can neither add markup nor break
// the document.
func esc(s string) string { return html.EscapeString(clean(s)) }

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
