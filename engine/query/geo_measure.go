package query

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
)

// The reference's geodesy on the sphere of radius 6371008.8 m (the mean
// WGS 84 radius): haversine distance, the spherical-excess ring area, in
// its order of operations, on V8's trigonometry (geo_libm.go).

const earthRadius = 6371008.8

// degToRad is Math.PI / 180 rounded once, as JavaScript computes it.
var degToRad = float64(math.Pi) / 180

// haversine is the great-circle distance in metres. A NaN coordinate
// gives the antipodal distance, as the reference's clamp does.
func haversine(lon1, lat1, lon2, lat2 float64) float64 {
	return haversineCos(lon1, lat1, lon2, lat2, jsCos(float64(lat1*degToRad)), jsCos(float64(lat2*degToRad)))
}

// haversineCos is haversine given the cosines of the two latitudes, so a
// line computes each position's once.
func haversineCos(lon1, lat1, lon2, lat2, cos1, cos2 float64) float64 {
	dLat := float64((lat2 - lat1) * degToRad)
	dLon := float64((lon2 - lon1) * degToRad)
	s1 := jsSin(dLat / 2)
	s2 := jsSin(dLon / 2)
	h := float64(s1*s1) + float64(float64(float64(float64(cos1*cos2)*s2)*s2))
	r := math.Sqrt(h)
	if !(r < 1) {
		r = 1
	}
	return float64(2*earthRadius) * jsAsin(r)
}

// ringArea is the unsigned area of one ring; a ring of fewer than four
// positions has none. Edges join consecutive positions only: a ring whose
// last position does not repeat its first is measured without the
// closing edge, as the reference measures it.
func ringArea(ring []any) float64 {
	if len(ring) < 4 {
		return 0
	}
	var total float64
	// each position's sine serves the edge it ends and the one it starts
	lon := coord(ring[0], 0)
	sinLat := jsSin(float64(coord(ring[0], 1) * degToRad))
	for i := 1; i < len(ring); i++ {
		nextLon := coord(ring[i], 0)
		nextSin := jsSin(float64(coord(ring[i], 1) * degToRad))
		dLon := float64((nextLon - lon) * degToRad)
		total += float64(dLon * (2 + sinLat + nextSin))
		lon, sinLat = nextLon, nextSin
	}
	return math.Abs(float64(float64(total*earthRadius)*earthRadius) / 2)
}

// polygonArea is the exterior less the holes, never below zero.
func polygonArea(rings []any) float64 {
	if len(rings) == 0 {
		return 0
	}
	a := ringArea(jsList(rings[0]))
	for _, h := range rings[1:] {
		a -= ringArea(jsList(h))
	}
	if !(a > 0) { // NaN too: a coordinate JavaScript cannot read
		return 0
	}
	return a
}

// lineLength sums the great-circle lengths of consecutive positions.
func lineLength(line []any) float64 {
	if len(line) < 2 {
		return 0
	}
	var total float64
	lon, lat := coord(line[0], 0), coord(line[0], 1)
	cosLat := jsCos(float64(lat * degToRad))
	for i := 1; i < len(line); i++ {
		nextLon, nextLat := coord(line[i], 0), coord(line[i], 1)
		nextCos := jsCos(float64(nextLat * degToRad))
		total += haversineCos(lon, lat, nextLon, nextLat, cosLat, nextCos)
		lon, lat, cosLat = nextLon, nextLat, nextCos
	}
	return total
}

// geoArea sums the polygons of every geometry the value holds.
func geoArea(v any) float64 {
	return geoSum(v, 0, func(typ, coords any) float64 {
		var total float64
		switch typ {
		case "Polygon":
			total = polygonArea(jsList(coords))
		case "MultiPolygon":
			for _, poly := range jsList(coords) {
				total += polygonArea(jsList(poly))
			}
		}
		return total
	})
}

// geoLength sums the lines and ring perimeters the value holds.
func geoLength(v any) float64 {
	return geoSum(v, 0, func(typ, coords any) float64 {
		var total float64
		switch typ {
		case "LineString":
			total = lineLength(jsList(coords))
		case "MultiLineString", "Polygon":
			for _, line := range jsList(coords) {
				total += lineLength(jsList(line))
			}
		case "MultiPolygon":
			for _, poly := range jsList(coords) {
				for _, ring := range jsList(poly) {
					total += lineLength(jsList(ring))
				}
			}
		}
		return total
	})
}

// geoSum adds up what measure gives for each geometry the value holds,
// grouped as the reference's recursive sums group them: a collection's
// total is the sum of its members' own totals, each summed from zero, so
// that the rounding of every addition is the same.
func geoSum(v any, depth int, measure func(typ, coords any) float64) float64 {
	typ, coords, inner, members := geometryOf(v, depth)
	if inner != nil {
		return geoSum(inner, depth+1, measure)
	}
	if members != nil {
		var total float64
		for _, m := range members {
			total += geoSum(m, depth+1, measure)
		}
		return total
	}
	return measure(typ, coords)
}

// geoWithin reports whether the position is inside any polygon the value
// holds: inside the exterior ring and in none of the holes.
func geoWithin(lon, lat float64, v any, depth int) bool {
	typ, coords, inner, members := geometryOf(v, depth)
	if inner != nil && geoWithin(lon, lat, inner, depth+1) {
		return true
	}
	for _, m := range members {
		if geoWithin(lon, lat, m, depth+1) {
			return true
		}
	}
	switch typ {
	case "Polygon":
		return inPolygon(lon, lat, jsList(coords))
	case "MultiPolygon":
		for _, poly := range jsList(coords) {
			if inPolygon(lon, lat, jsList(poly)) {
				return true
			}
		}
	}
	return false
}

func inPolygon(x, y float64, rings []any) bool {
	if len(rings) == 0 || !inRing(x, y, jsList(rings[0])) {
		return false
	}
	for _, h := range rings[1:] {
		if inRing(x, y, jsList(h)) {
			return false
		}
	}
	return true
}

// inRing is the even-odd crossing test with a ray towards +x, decided by
// the exact orientation of the position against each edge, as the
// reference decides it. A position exactly on an edge is inside when it
// lies in the edge's box, open at the lower ends and closed at the upper
// ones: so an axis-aligned box keeps its left and bottom edges and loses
// its right and top ones, while a slanted edge keeps its inner points. A
// ring of fewer than three positions holds nothing. An edge with a
// coordinate JavaScript reads as NaN has a NaN orientation in the
// reference, neither zero nor positive: it is never the edge the position
// lies on, and it is crossed when it straddles the ray going down.
func inRing(x, y float64, ring []any) bool {
	if len(ring) < 3 {
		return false
	}
	in := false
	for i, j := 0, len(ring)-1; i < len(ring); j, i = i, i+1 {
		xi, yi := coord(ring[i], 0), coord(ring[i], 1)
		xj, yj := coord(ring[j], 0), coord(ring[j], 1)
		straddles := (yi > y) != (yj > y)
		spans := (xi < x) == (x <= xj) && (yi < y) == (y <= yj)
		if !straddles && !spans {
			continue
		}
		if math.IsNaN(float64((xi-x)*(yj-y)) - float64((yi-y)*(xj-x))) {
			if straddles && !jsGreater(ring[j], ring[i], 1) {
				in = !in
			}
			continue
		}
		s := orient(xi, yi, xj, yj, x, y)
		if s == 0 && spans {
			return true
		}
		if straddles && s != 0 && (s > 0) == jsGreater(ring[j], ring[i], 1) {
			in = !in
		}
	}
	return in
}

// jsGreater is JavaScript's p[i] > q[i] for two positions as JSON holds
// them: numbers compare as numbers, but two items that are strings, or
// arrays and objects (which JavaScript turns into strings first), compare
// as strings, so a ring's "9" is above its "10".
func jsGreater(p, q any, i int) bool {
	a, aok := item(p, i)
	b, bok := item(q, i)
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok {
			return x > y
		}
	}
	if aok && bok {
		if sa, ok := jsPrimitiveString(a); ok {
			if sb, ok := jsPrimitiveString(b); ok {
				return value.CompareUTF16(sa, sb) > 0
			}
		}
	}
	return coord(p, i) > coord(q, i)
}

// jsPrimitiveString is the string JavaScript's ToPrimitive makes of a
// string, an array (its items joined by commas) or an object; other
// values stay numbers.
func jsPrimitiveString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any:
		return "[object Object]", true
	case []any:
		parts := make([]string, len(x))
		for k, e := range x {
			switch y := e.(type) {
			case nil:
			case float64:
				parts[k] = value.NumberString(y)
			case bool:
				parts[k] = strconv.FormatBool(y)
			default:
				parts[k], _ = jsPrimitiveString(y)
			}
		}
		return strings.Join(parts, ","), true
	}
	return "", false
}

// ccwErrBound is Shewchuk's bound on the rounding error of the float
// orientation: past it the float sign is the exact one.
const ccwErrBound = (3 + 16*0x1p-53) * 0x1p-53

// orient is the exact sign of (ax-cx)(by-cy) - (bx-cx)(ay-cy): the float
// determinant where it is clearly signed, exact rationals otherwise.
func orient(ax, ay, bx, by, cx, cy float64) int {
	if ax == bx && ay == by { // a ring's closing edge has no direction
		return 0
	}
	left := float64((ax - cx) * (by - cy))
	right := float64((bx - cx) * (ay - cy))
	det := left - right
	// products of opposite signs, or a zero one, leave det's sign exact
	// (rounding keeps a sign): Shewchuk's shortcut
	if left == 0 || right == 0 || (left > 0) != (right > 0) {
		switch {
		case det > 0:
			return 1
		case det < 0:
			return -1
		}
		return 0
	}
	bound := float64(ccwErrBound * (math.Abs(left) + math.Abs(right)))
	switch {
	case det > bound:
		return 1
	case -det > bound:
		return -1
	}
	for _, f := range [...]float64{ax, ay, bx, by, cx, cy} {
		if !finite(f) {
			switch {
			case det > 0:
				return 1
			case det < 0:
				return -1
			}
			return 0
		}
	}
	r := func(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }
	dx1 := new(big.Rat).Sub(r(ax), r(cx))
	dy1 := new(big.Rat).Sub(r(by), r(cy))
	dx2 := new(big.Rat).Sub(r(bx), r(cx))
	dy2 := new(big.Rat).Sub(r(ay), r(cy))
	return new(big.Rat).Sub(dx1.Mul(dx1, dy1), dx2.Mul(dx2, dy2)).Sign()
}
