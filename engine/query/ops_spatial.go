package query

import (
	"math"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// §8.14 spatial. An operand is one item, an array or an object (a bare
// position or any GeoJSON value); anything else is JQ2001. An empty
// operand answers empty, or false for the two predicates, before the
// other operand is looked at. A value with a non-finite coordinate has no
// measurement (empty) and satisfies no predicate (false).

const geoExpected = "expected a GeoJSON value or a [longitude, latitude] position, got "

// geoArg requires a GeoJSON-shaped item.
func geoArg(v any, path string) any {
	switch v.(type) {
	case []any, map[string]any:
		return v
	}
	throw(fault.JQ2001, geoExpected+describe(v), path)
	return nil
}

// geoUnary is an optional-valued operator over one GeoJSON operand.
func geoUnary(measureFn func(v any) any) opEntry {
	return unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			return measureFn(geoArg(v, p))
		}
	})
}

// geoPair evaluates two GeoJSON operands; ok is false when either is empty.
func geoPair(a []arg, f *frame) (x, y any, ok bool) {
	x, y = a[0].get(f), a[1].get(f)
	if isEmpty(x) || isEmpty(y) {
		return nil, nil, false
	}
	return geoArg(x, a[0].path), geoArg(y, a[1].path), true
}

// geoStringArg requires one string item, naming what was expected.
func geoStringArg(v any, what, path string) string {
	s, ok := v.(string)
	if !ok {
		throw(fault.JQ2001, "expected "+what+", got "+describe(v), path)
	}
	return s
}

func init() {
	operators["$bbox"] = geoUnary(func(v any) any {
		e := measure(v)
		if !e.usable() {
			return empty
		}
		return []any{e.west, e.south, e.east, e.north}
	})
	operators["$area"] = geoUnary(func(v any) any {
		if measure(v).nonFinite {
			return empty
		}
		return geoArea(v)
	})
	operators["$length"] = geoUnary(func(v any) any {
		if measure(v).nonFinite {
			return empty
		}
		return geoLength(v)
	})
	operators["$centroid"] = geoUnary(func(v any) any {
		e := measure(v)
		if !e.usable() {
			return empty
		}
		lon, lat := e.centroid()
		return []any{lon, lat}
	})
	operators["$distance"] = nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			x, y, ok := geoPair(a, f)
			if !ok {
				return empty
			}
			lon1, lat1, ok1 := representative(x)
			lon2, lat2, ok2 := representative(y)
			if !ok1 || !ok2 {
				return empty
			}
			return haversine(lon1, lat1, lon2, lat2)
		}
	})
	operators["$within"] = nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			x, y, ok := geoPair(a, f)
			if !ok {
				return false
			}
			lon, lat, ok := representative(x)
			if !ok || measure(y).nonFinite {
				return false
			}
			return geoWithin(lon, lat, y, 0)
		}
	})
	operators["$bbox-intersects"] = nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			x, y, ok := geoPair(a, f)
			if !ok {
				return false
			}
			p, q := measure(x), measure(y)
			if !p.usable() || !q.usable() {
				return false
			}
			return p.west <= q.east && q.west <= p.east && p.south <= q.north && q.south <= p.north
		}
	})
	operators["$geohash"] = nary(1, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			v := a[0].get(f)
			if isEmpty(v) {
				return empty
			}
			geoArg(v, a[0].path)
			// a value without a position is empty before the precision
			// is evaluated, as in the reference
			lon, lat, ok := representative(v)
			if !ok {
				return empty
			}
			precision := 9
			if len(a) == 2 {
				pv := a[1].get(f)
				n, isNum := pv.(float64)
				if !isNum || n != math.Trunc(n) || n < 1 || n > 12 {
					throw(fault.JQ2001, "a geohash precision must be an integer from 1 to 12, got "+describe(pv), a[1].path)
				}
				precision = int(n)
			}
			return geohashEncode(lon, lat, precision)
		}
	})
	operators["$geo-parse"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			geom, ok := parseWKT(geoStringArg(v, "a Well-Known Text string", p))
			if !ok {
				return empty
			}
			if f.keep {
				f.built = true
				return orderedGeometry(geom)
			}
			return geom
		}
	})
	operators["$geo-text"] = geoUnary(func(v any) any {
		if measure(v).nonFinite {
			return empty
		}
		s, ok := writeWKT(v)
		if !ok {
			return empty
		}
		return s
	})
	operators["$geohash-bounds"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			w, s, e, n, ok := geohashDecode(geoStringArg(v, "a geohash cell string", p))
			if !ok {
				return empty
			}
			if f.keep {
				f.built = true
				return orderedGeometry(geohashBounds(w, s, e, n))
			}
			return geohashBounds(w, s, e, n)
		}
	})
	operators["$geohash-neighbours"] = unary(func(a []arg, opPath string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			cell := geoStringArg(v, "a geohash cell string", p)
			w, s, e, n, ok := geohashDecode(cell)
			if !ok {
				return empty
			}
			out := geohashNeighbours(cell, w, s, e, n)
			f.allocItems(len(out), opPath)
			return seqOf(out)
		}
	})
	operators["$geo-simplify"] = nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			// the reference evaluates both operands, and only then
			// answers an empty value with empty, whatever the tolerance
			v := a[0].get(f)
			tv := a[1].get(f)
			if isEmpty(v) || isEmpty(tv) {
				return empty
			}
			tol, isNum := tv.(float64)
			if !isNum || !(tol >= 0) || math.IsInf(tol, 1) {
				throw(fault.JQ2001, "a simplification tolerance is a non-negative number of degrees, got "+describe(tv), a[1].path)
			}
			// the operand as read, and as held when the query built
			// objects in it, whose order the answer keeps
			p := v
			if f.built {
				p = plainItems(v)
			}
			return simplifyValue(geoArg(p, a[0].path), v, tol)
		}
	})
}

// orderedGeometry is a geometry the operators build ($geo-parse,
// $geohash-bounds) as the reference writes it, type first, for an
// evaluation that walks what it builds: {"type", "coordinates"} or
// {"type", "geometries"} with each member geometry the same way.
func orderedGeometry(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := value.NewObject(2)
	out.Set("type", m["type"])
	if c, ok := m["coordinates"]; ok {
		out.Set("coordinates", c)
		return out
	}
	members, _ := m["geometries"].([]any)
	list := make([]any, len(members))
	for i, g := range members {
		list[i] = orderedGeometry(g)
	}
	out.Set("geometries", list)
	return out
}
