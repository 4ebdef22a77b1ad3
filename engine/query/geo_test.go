package query

import (
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

var wktTable = []struct {
	text string
	want any // the geometry, or nil when the text is not WKT
}{
	{"POINT (1 2)", map[string]any{"type": "Point", "coordinates": []any{1.0, 2.0}}},
	{"point(1 2)", map[string]any{"type": "Point", "coordinates": []any{1.0, 2.0}}},
	{"POINT Z (1 2 3)", map[string]any{"type": "Point", "coordinates": []any{1.0, 2.0, 3.0}}},
	{"POINT M (1 2 3)", map[string]any{"type": "Point", "coordinates": []any{1.0, 2.0}}},
	{"POINT ZM (1 2 3 4)", map[string]any{"type": "Point", "coordinates": []any{1.0, 2.0, 3.0}}},
	{"POINT EMPTY", map[string]any{"type": "Point", "coordinates": []any{}}},
	{"POINT (.5 5.)", map[string]any{"type": "Point", "coordinates": []any{0.5, 5.0}}},
	{"POINT (1e400 2)", map[string]any{"type": "Point", "coordinates": []any{math.Inf(1), 2.0}}},
	{"MULTIPOINT ((1 2), 3 4)", map[string]any{"type": "MultiPoint", "coordinates": []any{[]any{1.0, 2.0}, []any{3.0, 4.0}}}},
	{"LINESTRING (1 2,3 4)", map[string]any{"type": "LineString", "coordinates": []any{[]any{1.0, 2.0}, []any{3.0, 4.0}}}},
	{"POLYGON ((0 0, 1 0, 1 1, 0 0))", map[string]any{"type": "Polygon", "coordinates": []any{[]any{[]any{0.0, 0.0}, []any{1.0, 0.0}, []any{1.0, 1.0}, []any{0.0, 0.0}}}}},
	{"GEOMETRYCOLLECTION (POINT EMPTY)", map[string]any{"type": "GeometryCollection", "geometries": []any{map[string]any{"type": "Point", "coordinates": []any{}}}}},
	{"GEOMETRYCOLLECTION EMPTY", map[string]any{"type": "GeometryCollection", "geometries": []any{}}},
	{" POINT (1 2)", nil},
	{"POINT (1 2) ", nil},
	{"POINTZ (1 2 3)", nil},
	{"POINT (1 2 3 4)", nil},
	{"POINT (1.2.3 4)", nil},
	{"POINT (0x10 2)", nil},
	{"POINT (1\u00a02)", nil},
	{"LINESTRING (1 2)", nil},
	{"LINESTRING (1 2, 3 4 5)", nil},
	{"POLYGON ((0 0, 1 0, 1 1))", nil},
	{"POLYGON ((1 2, 3 4, 1 2))", nil},
	{"MULTIPOINT (EMPTY, (1 2))", nil},
	{"SRID=4326;POINT (1 2)", nil},
	{"", nil},
}

func TestParseWKT(t *testing.T) {
	t.Parallel()
	for _, tc := range wktTable {
		got, ok := parseWKT(tc.text)
		if tc.want == nil {
			if ok {
				t.Errorf("parseWKT(%q) = %v, want not WKT", tc.text, got)
			}
			continue
		}
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseWKT(%q) = %v, %v; want %v", tc.text, got, ok, tc.want)
		}
	}
}

// hasNonFinite reports a value carrying NaN or an infinity anywhere.
func hasNonFinite(v any) bool {
	switch x := v.(type) {
	case float64:
		return !finite(x)
	case []any:
		for _, e := range x {
			if hasNonFinite(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasNonFinite(e) {
				return true
			}
		}
	}
	return false
}

// FuzzGeoParse reads arbitrary text as WKT: it never panics, and what it
// reads (when finite) is written back as text that reads again and is
// written the same way a second time.
func FuzzGeoParse(f *testing.F) {
	for _, tc := range wktTable {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		g, ok := parseWKT(text)
		if !ok || hasNonFinite(g) {
			return
		}
		out, ok := writeWKT(g)
		if !ok {
			t.Fatalf("%q parsed to %v, which has no WKT spelling", text, g)
		}
		again, ok := parseWKT(out)
		if !ok {
			t.Fatalf("%q was written as %q, which does not parse", text, out)
		}
		if out2, _ := writeWKT(again); out2 != out {
			t.Fatalf("%q: written %q, then %q", text, out, out2)
		}
	})
}

// FuzzGeoJSON walks arbitrary JSON as GeoJSON through every reading the
// spatial operators make: none panics, boxes are ordered, areas and
// lengths are not negative, and simplifying never adds a position.
func FuzzGeoJSON(f *testing.F) {
	for _, file := range loadCorpus(f) {
		if len(file.name) < 8 || file.name[:8] != "spatial-" {
			continue
		}
		for _, c := range file.cases {
			if b, err := value.Canonical(c.Doc); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := value.Decode([]byte(text), value.Limits{})
		if err != nil {
			return
		}
		e := measure(v)
		if e.usable() && (e.west > e.east || e.south > e.north) {
			t.Fatalf("box %v %v %v %v is not ordered", e.west, e.south, e.east, e.north)
		}
		if a := geoArea(v); a < 0 {
			t.Fatalf("area %v", a)
		}
		if l := geoLength(v); l < 0 {
			t.Fatalf("length %v", l)
		}
		if lon, lat, ok := representative(v); ok {
			geoWithin(lon, lat, v, 0)
			geohashEncode(lon, lat, 12)
		}
		_, _ = writeWKT(v)
		s := simplifyValue(v, v, 0.5)
		if !e.nonFinite && measure(s).n > e.n {
			t.Fatalf("simplifying %s added positions", text)
		}
		if !reflect.DeepEqual(simplifyValue(v, v, 0), v) {
			t.Fatalf("a tolerance of 0 changed %s", text)
		}
	})
}

// TestOrientExact checks the orientation sign against exact rationals on
// positions placed on and near lines, where the float determinant errs.
func TestOrientExact(t *testing.T) {
	t.Parallel()
	exact := func(ax, ay, bx, by, cx, cy float64) int {
		r := func(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }
		l := new(big.Rat).Mul(new(big.Rat).Sub(r(ax), r(cx)), new(big.Rat).Sub(r(by), r(cy)))
		rt := new(big.Rat).Mul(new(big.Rat).Sub(r(bx), r(cx)), new(big.Rat).Sub(r(ay), r(cy)))
		return l.Cmp(rt)
	}
	floatWrong := 0
	for i := range 2000 {
		// deterministic spread: an edge and a point a fraction along it
		fi := float64(i)
		ax, ay := math.Sin(fi)*5, math.Cos(fi*1.3)*5
		bx, by := math.Sin(fi*0.7)*5, math.Cos(fi*2.1)*5
		u := math.Mod(fi*0.618, 1)
		cx, cy := ax+u*(bx-ax), ay+u*(by-ay)
		want := exact(ax, ay, bx, by, cx, cy)
		if got := orient(ax, ay, bx, by, cx, cy); got != want {
			t.Fatalf("orient(%v %v, %v %v, %v %v) = %d, want %d", ax, ay, bx, by, cx, cy, got, want)
		}
		det := (ax-cx)*(by-cy) - (bx-cx)*(ay-cy)
		if (det > 0) != (want > 0) || (det < 0) != (want < 0) {
			floatWrong++
		}
	}
	if floatWrong == 0 {
		t.Fatal("no case where the float determinant errs: the test does not reach the exact path")
	}
}

// TestGeohashRoundTrip checks that a cell's box holds the position it
// was made from, and that each neighbour's box touches the cell's.
func TestGeohashRoundTrip(t *testing.T) {
	t.Parallel()
	for i := range 500 {
		fi := float64(i)
		lon, lat := math.Mod(fi*37.1, 360)-180, math.Mod(fi*17.3, 180)-90
		for _, p := range []int{1, 5, 9, 12} {
			cell := geohashEncode(lon, lat, p)
			w, s, e, n, ok := geohashDecode(cell)
			if !ok || lon < w || lon > e || lat < s || lat > n {
				t.Fatalf("(%v, %v) at %d is %q = [%v %v %v %v]", lon, lat, p, cell, w, s, e, n)
			}
			for _, nb := range geohashNeighbours(cell, w, s, e, n) {
				nw, ns, ne, nn, ok := geohashDecode(nb.(string))
				touch := ns <= n && nn >= s && (nw <= e && ne >= w || ne == 180 && w == -180 || nw == -180 && e == 180)
				if !ok || !touch {
					t.Fatalf("neighbour %q of %q does not touch it", nb, cell)
				}
			}
		}
	}
}

// TestSimplifyNumericPathAgrees holds the numeric Douglas–Peucker to the
// one that reads every position as JavaScript would: the same vertices
// kept, on lines whose vertices sit near their segments.
func TestSimplifyNumericPathAgrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 14))
	for round := range 2000 {
		n := 3 + rng.IntN(40)
		pts := make([]any, n)
		for i := range pts {
			pts[i] = []any{float64(i)*0.01 + rng.NormFloat64()*0.003, 52 + rng.NormFloat64()*0.003}
		}
		tol := rng.Float64() * 0.005
		slow := make([]bool, n)
		fast := make([]bool, n)
		dpStep(pts, 0, n-1, tol*tol, slow)
		xy := numericPositions(pts, nil)
		if xy == nil {
			t.Fatal("numeric positions not read as numbers")
		}
		dpStepXY(xy, 0, n-1, tol*tol, fast)
		if !slices.Equal(slow, fast) {
			t.Fatalf("round %d: kept %v, want %v", round, fast, slow)
		}
	}
	if numericPositions([]any{[]any{1.0, "2"}}, nil) != nil {
		t.Error("a string coordinate took the numeric path")
	}
}
