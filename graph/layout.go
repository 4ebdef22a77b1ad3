package graph

import (
	"math"
	"sort"
)

// The layout is a small Sugiyama: break cycles by depth-first search,
// rank by longest path, route every edge through dummy nodes (one per
// layer it crosses, labels in layers of their own so they never cover a
// node), order layers by barycenter sweeps keeping the ordering with the
// fewest crossings, and place each layer by isotonic regression towards
// its neighbours. Nested flows are laid out first and placed as one big
// node. Sizes assume a 12px monospace font.
const (
	charW        = 7.2  // width of one character of a node label
	labelCharW   = 6.6  // of an edge label (11px)
	lineH        = 16.0 // a label line
	padX, padY   = 12.0, 7.0
	minNodeW     = 64.0
	gapX         = 28.0 // between neighbours in a layer
	gapDummy     = 10.0 // between two edge routes
	gapY         = 14.0 // between layers
	clusterPad   = 14.0
	clusterTitle = 24.0
	startSize    = 14.0
	labelH       = 14.0
	selfLoopW    = 30.0
	margin       = 8.0
	maxLabelRune = 32
	sweeps       = 24
)

type point struct{ x, y float64 }

// box is one laid-out node; x, y is its centre.
type box struct {
	n          *Node
	x, y, w, h float64
	slotW      float64 // w plus room for a self loop
	inner      *layout
	selfLabel  string
	hasSelf    bool
}

// route is one edge's path, in the direction it is drawn.
type route struct {
	e       Edge
	pts     []point
	label   point // where the label's first line starts (its baseline)
	lines   []string
	hasText bool
}

type layout struct {
	w, h   float64
	boxes  []*box
	routes []route
}

// vnode is a real node or a dummy in the layered graph.
type vnode struct {
	real         int // index into boxes, -1 for a dummy
	w, h         float64
	layer, pos   int
	x, y         float64
	preds, succs []int
	labelOf      int     // route index whose label sits here, -1 if none
	anchor       float64 // where edges pass, relative to x
	band         float64 // the height of the vnode's layer
}

func nodeSize(n *Node) (w, h float64) {
	if n.Shape == ShapeStart {
		return startSize, startSize
	}
	label := Shorten(n.Label, maxLabelRune)
	w = float64(len([]rune(label))) * charW
	h = lineH
	if n.Detail != "" {
		w = math.Max(w, float64(len([]rune(Shorten(n.Detail, maxLabelRune+4))))*(charW*11/12))
		h += lineH - 2
	}
	return math.Max(w+2*padX, minNodeW), h + 2*padY
}

func layoutScope(s *Scope) *layout {
	lay, index := sizeBoxes(s)
	arcs := lay.arcsOf(s.Edges, index)
	n := len(lay.boxes)
	back := breakCycles(n, func(yield func(i, from, to int)) {
		for i, a := range arcs {
			yield(i, a.from, a.to)
		}
	})
	rank := longestPathRanks(n, arcs, back)
	vs, chains := lay.layered(s.Edges, arcs, back, rank)
	layers := orderLayers(vs)
	placeX(vs, layers)
	placeY(vs, layers)
	lay.fit(vs)
	for i := range arcs {
		lay.routes[i] = routeOf(lay, vs, chains[i], back[i], lay.routes[i])
	}
	return lay
}

// sizeBoxes makes a box per node, laying out nested flows first since
// their size is the node's; index maps node IDs to boxes.
func sizeBoxes(s *Scope) (*layout, map[string]int) {
	lay := &layout{}
	index := map[string]int{}
	for i, n := range s.Nodes {
		b := &box{n: n}
		if n.Inner != nil {
			b.inner = layoutScope(n.Inner)
			w, _ := nodeSize(&Node{Label: n.Label})
			b.w = math.Max(b.inner.w-2*margin+2*clusterPad, w)
			b.h = b.inner.h - 2*margin + clusterTitle + clusterPad
		} else {
			b.w, b.h = nodeSize(n)
		}
		b.slotW = b.w
		index[n.ID] = i
		lay.boxes = append(lay.boxes, b)
	}
	return lay, index
}

// arc is an edge between two distinct known nodes, by box index.
type arc struct{ from, to, edge int }

// arcsOf keeps the edges between known nodes; self loops are drawn beside
// their node, so they only widen its slot.
func (lay *layout) arcsOf(edges []Edge, index map[string]int) []arc {
	var arcs []arc
	for i, e := range edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		switch {
		case !okf || !okt:
			continue
		case f == t:
			b := lay.boxes[f]
			b.hasSelf, b.selfLabel = true, e.Label
			b.slotW = b.w + selfLoopW + labelWidth(e.Label)
			continue
		}
		arcs = append(arcs, arc{f, t, i})
	}
	return arcs
}

// oriented is the arc in the acyclic orientation: a back arc is reversed.
func (a arc) oriented(back bool) (from, to int) {
	if back {
		return a.to, a.from
	}
	return a.from, a.to
}

// longestPathRanks ranks the n nodes by longest path over the acyclic
// orientation of the arcs.
func longestPathRanks(n int, arcs []arc, back []bool) []int {
	out := make([][]int, n)
	indeg := make([]int, n)
	for i, a := range arcs {
		f, t := a.oriented(back[i])
		out[f] = append(out[f], t)
		indeg[t]++
	}
	rank := make([]int, n)
	queue := []int{}
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			queue = append(queue, v)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, t := range out[v] {
			rank[t] = max(rank[t], rank[v]+1)
			if indeg[t]--; indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	return rank
}

// layered builds the layered graph: real nodes on even layers, every arc
// routed through one dummy per odd or skipped layer; a label (wrapped,
// labelLines) widens and heightens the first. It adds the arcs'
// routes to lay, in arc order, and returns each arc's chain of vnodes.
func (lay *layout) layered(edges []Edge, arcs []arc, back []bool, rank []int) ([]*vnode, [][]int) {
	var vs []*vnode
	for i, b := range lay.boxes {
		vs = append(vs, &vnode{real: i, w: b.slotW, h: b.h, layer: 2 * rank[i], labelOf: -1})
	}
	chains := make([][]int, len(arcs))
	for i, a := range arcs {
		f, t := a.oriented(back[i])
		e := edges[a.edge]
		ri := len(lay.routes)
		lay.routes = append(lay.routes, route{e: e})
		chain := []int{f}
		for l := 2*rank[f] + 1; l < 2*rank[t]; l++ {
			d := &vnode{real: -1, w: 2, layer: l, labelOf: -1}
			// the label takes the first dummy, so it sits in a layer of its own
			if l == 2*rank[f]+1 && e.Label != "" {
				lines := labelLines(e.Label)
				w, h := labelSize(lines)
				d.w, d.h, d.labelOf = w+4, h, ri
				d.anchor = 2 - d.w/2
				lay.routes[ri].lines = lines
			}
			chain = append(chain, len(vs))
			vs = append(vs, d)
		}
		chain = append(chain, t)
		link(vs, chain)
		chains[i] = chain
	}
	return vs, chains
}

// link makes each vnode of a chain the predecessor of the next.
func link(vs []*vnode, chain []int) {
	for k := 1; k < len(chain); k++ {
		vs[chain[k-1]].succs = append(vs[chain[k-1]].succs, chain[k])
		vs[chain[k]].preds = append(vs[chain[k]].preds, chain[k-1])
	}
}

// fit moves the placed vnodes so the scope's origin is its top-left
// corner, sizes the scope, and gives the boxes their centres.
func (lay *layout) fit(vs []*vnode) {
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range vs {
		minX = math.Min(minX, v.x-v.w/2)
		maxX = math.Max(maxX, v.x+v.w/2)
		maxY = math.Max(maxY, v.y+v.h/2)
	}
	if len(vs) == 0 {
		minX, maxX = 0, 0
	}
	for _, v := range vs {
		v.x += margin - minX
		v.y += margin
	}
	lay.w, lay.h = maxX-minX+2*margin, maxY+2*margin
	for _, v := range vs {
		if v.real >= 0 {
			b := lay.boxes[v.real]
			b.x, b.y = v.x-(b.slotW-b.w)/2, v.y
		}
	}
}

// breakCycles marks the arcs that close a cycle in a depth-first search
// from node 0, then from every node not yet reached, in order.
func breakCycles(n int, arcs func(yield func(i, from, to int))) []bool {
	type adj struct{ arc, to int }
	outs := make([][]adj, n)
	count := 0
	arcs(func(i, f, t int) {
		outs[f] = append(outs[f], adj{i, t})
		count = max(count, i+1)
	})
	back := make([]bool, count)
	state := make([]byte, n) // 0 new, 1 on stack, 2 done
	type frame struct{ v, next int }
	for root := 0; root < n; root++ {
		if state[root] != 0 {
			continue
		}
		stack := []frame{{root, 0}}
		state[root] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(outs[top.v]) {
				state[top.v] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			a := outs[top.v][top.next]
			top.next++
			switch state[a.to] {
			case 1:
				back[a.arc] = true
			case 0:
				state[a.to] = 1
				stack = append(stack, frame{a.to, 0})
			}
		}
	}
	return back
}

// orderLayers groups vnodes by layer and orders each layer to reduce
// crossings.
func orderLayers(vs []*vnode) [][]int {
	top := 0
	for _, v := range vs {
		top = max(top, v.layer)
	}
	layers := make([][]int, top+1)
	if len(vs) == 0 {
		return nil
	}
	for i, v := range vs {
		v.pos = len(layers[v.layer])
		layers[v.layer] = append(layers[v.layer], i)
	}
	best := crossings(vs, layers)
	saved := snapshot(layers)
	for it := 0; it < sweeps && best > 0; it++ {
		if it%2 == 0 {
			for l := 1; l < len(layers); l++ {
				sortByBarycenter(vs, layers[l], func(v *vnode) []int { return v.preds })
			}
		} else {
			for l := len(layers) - 2; l >= 0; l-- {
				sortByBarycenter(vs, layers[l], func(v *vnode) []int { return v.succs })
			}
		}
		if c := crossings(vs, layers); c < best {
			best, saved = c, snapshot(layers)
		}
	}
	for l, layer := range saved {
		copy(layers[l], layer)
		for p, i := range layers[l] {
			vs[i].pos = p
		}
	}
	return layers
}

func snapshot(layers [][]int) [][]int {
	out := make([][]int, len(layers))
	for i, l := range layers {
		out[i] = append([]int(nil), l...)
	}
	return out
}

func sortByBarycenter(vs []*vnode, layer []int, nbrs func(*vnode) []int) {
	key := make(map[int]float64, len(layer))
	for _, i := range layer {
		ns := nbrs(vs[i])
		if len(ns) == 0 {
			key[i] = float64(vs[i].pos)
			continue
		}
		sum := 0.0
		for _, j := range ns {
			sum += float64(vs[j].pos)
		}
		key[i] = sum / float64(len(ns))
	}
	sort.SliceStable(layer, func(a, b int) bool { return key[layer[a]] < key[layer[b]] })
	for p, i := range layer {
		vs[i].pos = p
	}
}

// crossings counts pairs of crossing segments between adjacent layers.
// Very large graphs are not counted (the first ordering is kept).
func crossings(vs []*vnode, layers [][]int) int {
	total := 0
	for l := 0; l+1 < len(layers); l++ {
		var segs [][2]int
		for _, i := range layers[l] {
			for _, j := range vs[i].succs {
				segs = append(segs, [2]int{vs[i].pos, vs[j].pos})
			}
		}
		if len(segs) > 400 {
			return 0
		}
		for a := range segs {
			for b := a + 1; b < len(segs); b++ {
				if (segs[a][0]-segs[b][0])*(segs[a][1]-segs[b][1]) < 0 {
					total++
				}
			}
		}
	}
	return total
}
