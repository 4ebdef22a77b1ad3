package query

import "github.com/jetflow/jetflow/engine/value"

// $geo-simplify: Douglas–Peucker over each line and ring, planar in the
// coordinates' own degrees. A vertex stays when its distance to the
// segment joining the kept ends is greater than the tolerance. A line
// keeps both ends; a ring that would fall below four positions is kept
// as it was, so what was valid stays valid. A tolerance of 0, a value
// with a non-finite coordinate, or a value with no lines comes back as
// it was. Other members of a Feature or geometry are kept.
//
// The reference answers {...value, coordinates} (and so for a Feature's
// geometry and a collection's members): a copy in the operand's own
// member order with the simplified member in its place, and a part it
// leaves alone is the operand's own. So the walk reads v, the operand
// with its objects as maps, and builds from held, the operand as the
// query holds it (the same value, or one whose objects are
// *value.Object where v has maps, in the order the query built them).

func simplifyValue(v, held any, tol float64) any {
	if tol == 0 || measure(v).nonFinite {
		return held
	}
	return simplifyNode(v, held, tol*tol, 0)
}

func simplifyNode(v, held any, sqTol float64, depth int) any {
	m, ok := v.(map[string]any)
	if !ok || depth > 64 {
		return held
	}
	member := func(key string) any {
		x, _ := value.Member(held, key)
		return x
	}
	mapList := func(key string, each func(x, h any) any) any {
		list, ok := m[key].([]any)
		if !ok {
			return held
		}
		hl, _ := member(key).([]any)
		out := make([]any, len(list))
		for i, x := range list {
			out[i] = each(x, hl[i])
		}
		return withMember(held, key, out)
	}
	node := func(x, h any) any { return simplifyNode(x, h, sqTol, depth+1) }
	line := func(x, h any) any { return simplifyLine(x, h, sqTol, false) }
	ring := func(x, h any) any { return simplifyLine(x, h, sqTol, true) }
	switch m["type"] {
	case "Feature":
		if _, has := m["geometry"]; !has {
			return held
		}
		return withMember(held, "geometry", node(m["geometry"], member("geometry")))
	case "FeatureCollection":
		return mapList("features", node)
	case "GeometryCollection":
		return mapList("geometries", node)
	case "LineString":
		return withMember(held, "coordinates", line(m["coordinates"], member("coordinates")))
	case "MultiLineString":
		return mapList("coordinates", line)
	case "Polygon":
		return mapList("coordinates", ring)
	case "MultiPolygon":
		return mapList("coordinates", func(poly, h any) any {
			rings, ok := poly.([]any)
			if !ok {
				return h
			}
			hr, _ := h.([]any)
			out := make([]any, len(rings))
			for i, r := range rings {
				out[i] = ring(r, hr[i])
			}
			return out
		})
	}
	return held
}

// withMember is JavaScript's {...obj, key: val} over an object the query
// holds: a map stays a map, an ordered object keeps its order, with key
// in its place or, when new, last.
func withMember(obj any, key string, val any) any {
	if o, ok := obj.(*value.Object); ok {
		out := value.NewObject(o.Len() + 1)
		for i := range o.Len() {
			out.Set(o.At(i))
		}
		out.Set(key, val)
		return out
	}
	m, _ := obj.(map[string]any)
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	out[key] = val
	return out
}

// simplifyLine keeps the first and last positions and every vertex the
// recursion finds farther than the tolerance from its segment; it reads
// v and answers positions of held, the same line as the query holds it.
func simplifyLine(v, held any, sqTol float64, isRing bool) any {
	pts, ok := v.([]any)
	if !ok || len(pts) <= 2 {
		return held
	}
	hp, _ := held.([]any)
	keep := make([]bool, len(pts))
	keep[0], keep[len(pts)-1] = true, true
	var buf [64]float64
	if xy := numericPositions(pts, buf[:0]); xy != nil {
		dpStepXY(xy, 0, len(pts)-1, sqTol, keep)
	} else {
		dpStep(pts, 0, len(pts)-1, sqTol, keep)
	}
	out := make([]any, 0, len(pts))
	for i, k := range keep {
		if k {
			out = append(out, hp[i])
		}
	}
	if isRing && len(out) < 4 {
		return held
	}
	return out
}

func dpStep(pts []any, first, last int, sqTol float64, keep []bool) {
	maxSq, index := sqTol, -1
	for i := first + 1; i < last; i++ {
		if d := sqSegDist(pts[i], pts[first], pts[last]); d > maxSq {
			maxSq, index = d, i
		}
	}
	if index < 0 {
		return
	}
	keep[index] = true
	if index-first > 1 {
		dpStep(pts, first, index, sqTol, keep)
	}
	if last-index > 1 {
		dpStep(pts, index, last, sqTol, keep)
	}
}

// sqSegDist is the squared planar distance from p to the segment ab.
func sqSegDist(p, a, b any) float64 {
	px, py := coord(p, 0), coord(p, 1)
	x, y := coord(a, 0), coord(a, 1)
	dx, dy := coord(b, 0)-x, coord(b, 1)-y
	if dx != 0 || dy != 0 {
		t := (float64((px-x)*dx) + float64((py-y)*dy)) / (float64(dx*dx) + float64(dy*dy))
		if t > 1 {
			x, y = coord(b, 0), coord(b, 1)
		} else if t > 0 {
			// JavaScript's +=: a coordinate written as a string concatenates
			ax, okx := item(a, 0)
			ay, oky := item(a, 1)
			x = jsAdd(ax, okx, float64(dx*t))
			y = jsAdd(ay, oky, float64(dy*t))
		}
	}
	dx, dy = px-x, py-y
	return float64(dx*dx) + float64(dy*dy)
}

// numericPositions appends each position's longitude and latitude to xy
// when every position is an array whose first two items are numbers (the
// case worth a fast path); nil when one is not, and then the recursion
// reads each position as JavaScript would, every time it looks at it.
func numericPositions(pts []any, xy []float64) []float64 {
	for _, p := range pts {
		a, ok := p.([]any)
		if !ok || len(a) < 2 {
			return nil
		}
		x, okx := a[0].(float64)
		y, oky := a[1].(float64)
		if !okx || !oky {
			return nil
		}
		xy = append(xy, x, y)
	}
	return xy
}

// dpStepXY is dpStep over positions already read as numbers.
func dpStepXY(xy []float64, first, last int, sqTol float64, keep []bool) {
	maxSq, index := sqTol, -1
	ax, ay := xy[2*first], xy[2*first+1]
	bx, by := xy[2*last], xy[2*last+1]
	for i := first + 1; i < last; i++ {
		if d := sqSegDistXY(xy[2*i], xy[2*i+1], ax, ay, bx, by); d > maxSq {
			maxSq, index = d, i
		}
	}
	if index < 0 {
		return
	}
	keep[index] = true
	if index-first > 1 {
		dpStepXY(xy, first, index, sqTol, keep)
	}
	if last-index > 1 {
		dpStepXY(xy, index, last, sqTol, keep)
	}
}

// sqSegDistXY is sqSegDist over numbers, in the same order of operations.
func sqSegDistXY(px, py, ax, ay, bx, by float64) float64 {
	x, y := ax, ay
	dx, dy := bx-x, by-y
	if dx != 0 || dy != 0 {
		t := (float64((px-x)*dx) + float64((py-y)*dy)) / (float64(dx*dx) + float64(dy*dy))
		if t > 1 {
			x, y = bx, by
		} else if t > 0 {
			x = ax + float64(dx*t)
			y = ay + float64(dy*t)
		}
	}
	dx, dy = px-x, py-y
	return float64(dx*dx) + float64(dy*dy)
}
