package graph

import (
	"math"
	"sort"
)

// placeX gives every vnode an x: packed layers, then alternate sweeps
// that pull each layer towards its neighbours in the layer above or
// below, and a last pass towards both.
func placeX(vs []*vnode, layers [][]int) {
	for _, layer := range layers {
		x, sum := 0.0, 0.0
		for k, i := range layer {
			if k > 0 {
				x += sep(vs[layer[k-1]], vs[i])
			}
			vs[i].x = x
			sum += x
		}
		for _, i := range layer {
			vs[i].x -= sum / float64(len(layer))
		}
	}
	preds := func(v *vnode) []int { return v.preds }
	succs := func(v *vnode) []int { return v.succs }
	both := func(v *vnode) []int { return append(append([]int(nil), v.preds...), v.succs...) }
	for round := 0; round < 8; round++ {
		for l := 1; l < len(layers); l++ {
			align(vs, layers[l], preds)
		}
		for l := len(layers) - 2; l >= 0; l-- {
			align(vs, layers[l], succs)
		}
	}
	for l := range layers {
		align(vs, layers[l], both)
	}
}

// sep is the least distance between the centres of neighbours a, b.
func sep(a, b *vnode) float64 {
	gap := gapX
	if a.real < 0 && b.real < 0 {
		gap = gapDummy
	}
	return (a.w+b.w)/2 + gap
}

// align moves one layer as close as its order and spacing allow to the
// mean x of each vnode's neighbours: a weighted isotonic regression of
// the targets shifted by the cumulative spacing, solved by pooling
// adjacent violators.
func align(vs []*vnode, layer []int, nbrs func(*vnode) []int) {
	n := len(layer)
	if n == 0 {
		return
	}
	off := make([]float64, n)
	t := make([]float64, n)
	w := make([]float64, n)
	for k, i := range layer {
		v := vs[i]
		if k > 0 {
			off[k] = off[k-1] + sep(vs[layer[k-1]], v)
		}
		target, weight := v.x, 0.1
		if ns := nbrs(v); len(ns) > 0 {
			sum := 0.0
			for _, j := range ns {
				sum += vs[j].x + vs[j].anchor
			}
			target, weight = sum/float64(len(ns))-v.anchor, 1
			if v.real < 0 {
				weight = 2 // keep long edges straight
			}
		}
		t[k], w[k] = target-off[k], weight
	}
	for k, y := range pava(t, w) {
		vs[layer[k]].x = y + off[k]
	}
}

// pava returns the non-decreasing sequence closest to t in weighted least
// squares.
func pava(t, w []float64) []float64 {
	type block struct {
		sum, weight float64
		n           int
	}
	var bs []block
	for i := range t {
		bs = append(bs, block{t[i] * w[i], w[i], 1})
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sum/a.weight <= b.sum/b.weight {
				break
			}
			bs = append(bs[:len(bs)-2], block{a.sum + b.sum, a.weight + b.weight, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(t))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.sum/b.weight)
		}
	}
	return out
}

// placeY stacks the layers, each as tall as its tallest vnode.
func placeY(vs []*vnode, layers [][]int) {
	y := 0.0
	for l, layer := range layers {
		h := 0.0
		for _, i := range layer {
			h = math.Max(h, vs[i].h)
		}
		for _, i := range layer {
			vs[i].y, vs[i].band = y+h/2, h
		}
		if l%2 == 1 && h == 0 {
			// An odd layer with no label still separates node layers.
			y += gapY
			continue
		}
		y += h + gapY
	}
}

// routeOf draws one arc through its chain of vnodes: out of the bottom of
// the first node, straight down through each dummy's layer (beside a
// label), into the top of the last; reversed arcs are then turned round
// so that the arrow points at the edge's real target. An edge bends only
// between layers, so it never runs across a label, which lies within its
// layer.
func routeOf(lay *layout, vs []*vnode, chain []int, reversed bool, r route) route {
	first, last := vs[chain[0]], vs[chain[len(chain)-1]]
	fb, lb := lay.boxes[first.real], lay.boxes[last.real]
	pts := []point{{fb.x + portOffset(vs, first, first.succs, chain[1], fb.w), fb.y + fb.h/2}}
	for _, i := range chain[1 : len(chain)-1] {
		d := vs[i]
		x := d.x + d.anchor
		if d.band > 0 {
			pts = append(pts, point{x, d.y - d.band/2}, point{x, d.y + d.band/2})
		} else {
			pts = append(pts, point{x, d.y})
		}
		if d.labelOf >= 0 {
			r.label, r.hasText = point{x + 5, d.y - d.h/2 + labelH/2 + 4}, true
		}
	}
	pts = append(pts, point{lb.x + portOffset(vs, last, last.preds, chain[len(chain)-2], lb.w), lb.y - lb.h/2})
	if reversed {
		for i, j := 0, len(pts)-1; i < j; i, j = i+1, j-1 {
			pts[i], pts[j] = pts[j], pts[i]
		}
	}
	r.pts = pts
	return r
}

// portOffset spreads the edges leaving (or entering) one side of a node
// in the order of the vnodes they lead to.
func portOffset(vs []*vnode, v *vnode, ends []int, end int, width float64) float64 {
	if len(ends) < 2 {
		return 0
	}
	sorted := append([]int(nil), ends...)
	sort.SliceStable(sorted, func(a, b int) bool { return vs[sorted[a]].x < vs[sorted[b]].x })
	k := 0
	for i, e := range sorted {
		if e == end {
			k = i
		}
	}
	step := math.Min(14, width*0.6/float64(len(ends)-1))
	return (float64(k) - float64(len(ends)-1)/2) * step
}
