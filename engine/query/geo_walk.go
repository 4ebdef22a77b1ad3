package query

import (
	"math"
	"strconv"
	"unicode/utf16"

	"github.com/jetflow/jetflow/engine/value"
)

// §8.14 reads GeoJSON two ways, as the reference does. Positions (for
// $bbox, $centroid, the representative position and the non-finite rule)
// come from a forgiving walk: an array whose first two items are numbers
// is a position, any other array is searched, and an object is read by
// its type (a Feature's geometry, a collection's members, anything else's
// coordinates). Surfaces and lines (for $area, $length, $within) come
// from the typed geometries only, and their coordinates are read the way
// JavaScript indexes them, coercions included.

// extent is what one pass of the forgiving walk learns: the box, the sum
// for the centroid, and whether a coordinate is not finite.
type extent struct {
	n                        int
	west, south, east, north float64
	sumLon, sumLat           float64
	nonFinite                bool
}

func measure(v any) extent {
	e := extent{west: math.Inf(1), south: math.Inf(1), east: math.Inf(-1), north: math.Inf(-1)}
	e.walk(v)
	return e
}

// walk adds every position the forgiving walk finds.
func (e *extent) walk(v any) {
	switch x := v.(type) {
	case []any:
		if len(x) >= 2 {
			if lon, ok := x[0].(float64); ok {
				if lat, ok := x[1].(float64); ok {
					e.add(lon, lat)
					return
				}
			}
		}
		for _, item := range x {
			e.walk(item)
		}
	case map[string]any:
		switch x["type"] {
		case "Feature":
			e.walk(x["geometry"])
		case "FeatureCollection":
			if list, ok := x["features"].([]any); ok {
				for _, item := range list {
					e.walk(item)
				}
			}
		case "GeometryCollection":
			if list, ok := x["geometries"].([]any); ok {
				for _, item := range list {
					e.walk(item)
				}
			}
		default:
			e.walk(x["coordinates"])
		}
	}
}

func (e *extent) add(lon, lat float64) {
	if !finite(lon) || !finite(lat) {
		e.nonFinite = true
	}
	e.n++
	e.west, e.east = jsMin(e.west, lon), jsMax(e.east, lon)
	e.south, e.north = jsMin(e.south, lat), jsMax(e.north, lat)
	e.sumLon += lon
	e.sumLat += lat
}

// usable reports a value with at least one position, all finite.
func (e extent) usable() bool { return e.n > 0 && !e.nonFinite }

func (e extent) centroid() (float64, float64) {
	return e.sumLon / float64(e.n), e.sumLat / float64(e.n)
}

// jsMin and jsMax are Math.min and Math.max: NaN wins, and -0 is below 0.
func jsMin(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	if a == b {
		if math.Signbit(a) {
			return a
		}
		return b
	}
	if a < b {
		return a
	}
	return b
}

func jsMax(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	if a == b {
		if math.Signbit(a) {
			return b
		}
		return a
	}
	if a > b {
		return a
	}
	return b
}

// representative is a bare position or a Point's own coordinates, and
// anything else's centroid; ok is false for a value with no usable one.
func representative(v any) (lon, lat float64, ok bool) {
	e := measure(v)
	if !e.usable() {
		return 0, 0, false
	}
	if p, isPos := positionOf(v); isPos {
		return p[0], p[1], true
	}
	if m, isObj := v.(map[string]any); isObj && m["type"] == "Point" {
		if p, isPos := positionOf(m["coordinates"]); isPos {
			return p[0], p[1], true
		}
	}
	lon, lat = e.centroid()
	return lon, lat, true
}

// positionOf reads an array whose first two items are numbers.
func positionOf(v any) ([2]float64, bool) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return [2]float64{}, false
	}
	lon, ok1 := a[0].(float64)
	lat, ok2 := a[1].(float64)
	return [2]float64{lon, lat}, ok1 && ok2
}

// geometryOf reads one object of the typed walk: a Feature or a
// collection gives its members (a Feature its geometry, unless that is a
// FeatureCollection), a geometry its type and coordinates. Nesting deeper than the engine's documents can
// reach is cut off.
func geometryOf(v any, depth int) (typ, coords, inner any, members []any) {
	m, ok := v.(map[string]any)
	if !ok || depth > maxGeoDepth {
		return nil, nil, nil, nil
	}
	switch t := m["type"]; t {
	case "Feature":
		// a Feature whose geometry is a FeatureCollection holds nothing
		if g, ok := m["geometry"].(map[string]any); ok && g["type"] == "FeatureCollection" {
			return nil, nil, nil, nil
		}
		return nil, nil, m["geometry"], nil
	case "FeatureCollection":
		return nil, nil, nil, jsList(m["features"])
	case "GeometryCollection":
		return nil, nil, nil, jsList(m["geometries"])
	default:
		return t, m["coordinates"], nil, nil
	}
}

// maxGeoDepth bounds the typed walk's recursion.
const maxGeoDepth = 10000

// jsList is the items a JavaScript loop over v's indices would visit: an
// array's items, a string's UTF-16 units as one-unit strings.
func jsList(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case string:
		units := utf16.Encode([]rune(x))
		out := make([]any, len(units))
		for i, u := range units {
			out[i] = string(utf16.Decode([]uint16{u}))
		}
		return out
	}
	return nil
}

// coord is JavaScript's Number(p[i]): the item at index i coerced, NaN
// when there is none.
func coord(p any, i int) float64 {
	switch x := p.(type) {
	case []any:
		if i < len(x) {
			return value.ToNumber(x[i])
		}
	case string:
		if l := jsList(x); i < len(l) {
			return value.ToNumber(l[i])
		}
	case map[string]any:
		if v, ok := x[strconv.Itoa(i)]; ok {
			return value.ToNumber(v)
		}
	}
	return math.NaN()
}

// jsAdd is JavaScript's raw + n where raw is a coordinate as written: a
// string (or an array, through its text) concatenates and is read back as
// a number, anything else adds.
func jsAdd(raw any, present bool, n float64) float64 {
	if !present {
		return math.NaN()
	}
	switch x := raw.(type) {
	case string:
		return value.StringToNumber(x + value.NumberString(n))
	case []any:
		if len(x) == 0 {
			return value.StringToNumber(value.NumberString(n))
		}
		if len(x) == 1 {
			if s, ok := value.ItemString(x[0]); ok {
				return value.StringToNumber(s + value.NumberString(n))
			}
		}
		return math.NaN()
	case map[string]any:
		return math.NaN()
	}
	return value.ToNumber(raw) + n
}

// item is p[i] as written; ok is false when there is none (JavaScript's
// undefined, which adds to NaN where null adds as 0).
func item(p any, i int) (any, bool) {
	switch x := p.(type) {
	case []any:
		if i < len(x) {
			return x[i], true
		}
	case string:
		if l := jsList(x); i < len(l) {
			return l[i], true
		}
	case map[string]any:
		v, ok := x[strconv.Itoa(i)]
		return v, ok
	}
	return nil, false
}
