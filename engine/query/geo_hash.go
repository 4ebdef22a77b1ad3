package query

import "strings"

// Geohash cells: the standard base-32 interleaving, longitude first. A
// position outside [-180, 180] × [-90, 90] is not refused: bisection
// keeps choosing the nearest edge, as the reference does.

const geohashAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

func geohashEncode(lon, lat float64, precision int) string {
	var b strings.Builder
	b.Grow(precision)
	latMin, latMax, lonMin, lonMax := -90.0, 90.0, -180.0, 180.0
	idx, bit, even := 0, 0, true
	for b.Len() < precision {
		if even {
			mid := (lonMin + lonMax) / 2
			if lon >= mid {
				idx = idx*2 + 1
				lonMin = mid
			} else {
				idx *= 2
				lonMax = mid
			}
		} else {
			mid := (latMin + latMax) / 2
			if lat >= mid {
				idx = idx*2 + 1
				latMin = mid
			} else {
				idx *= 2
				latMax = mid
			}
		}
		even = !even
		if bit++; bit == 5 {
			b.WriteByte(geohashAlphabet[idx])
			bit, idx = 0, 0
		}
	}
	return b.String()
}

// geohashDecode is the cell's box; ok is false for an empty string or a
// character outside the alphabet (which is lower-case only).
func geohashDecode(cell string) (west, south, east, north float64, ok bool) {
	if cell == "" {
		return 0, 0, 0, 0, false
	}
	south, north, west, east = -90, 90, -180, 180
	even := true
	for i := 0; i < len(cell); i++ {
		v := strings.IndexByte(geohashAlphabet, cell[i])
		if v < 0 {
			return 0, 0, 0, 0, false
		}
		for n := 4; n >= 0; n-- {
			bitN := v >> n & 1
			if even {
				mid := (west + east) / 2
				if bitN == 1 {
					west = mid
				} else {
					east = mid
				}
			} else {
				mid := (south + north) / 2
				if bitN == 1 {
					south = mid
				} else {
					north = mid
				}
			}
			even = !even
		}
	}
	return west, south, east, north, true
}

// geohashBounds is the cell as a closed Polygon, counter-clockwise from
// its south-west corner.
func geohashBounds(w, s, e, n float64) map[string]any {
	// each corner number is boxed once and shared by the positions, which
	// are cut from one backing array
	var W, S, E, N any = w, s, e, n
	xy := []any{W, S, E, S, E, N, W, N, W, S}
	ring := []any{xy[0:2:2], xy[2:4:4], xy[4:6:6], xy[6:8:8], xy[8:10:10]}
	return map[string]any{"type": "Polygon", "coordinates": []any{ring}}
}

// geohashNeighbours is the 3×3 block in reading order; a cell past a
// pole is absent and longitude wraps across the antimeridian.
func geohashNeighbours(cell string, w, s, e, n float64) []any {
	width, height := e-w, n-s
	lonC, latC := (w+e)/2, (s+n)/2
	out := make([]any, 0, 9)
	for dy := 1; dy >= -1; dy-- {
		lat := latC + float64(float64(dy)*height)
		if lat > 90 || lat < -90 {
			continue
		}
		for dx := -1; dx <= 1; dx++ {
			if dx == 0 && dy == 0 {
				out = append(out, cell)
				continue
			}
			lon := lonC + float64(float64(dx)*width)
			if lon > 180 {
				lon -= 360
			} else if lon < -180 {
				lon += 360
			}
			out = append(out, geohashEncode(lon, lat, len(cell)))
		}
	}
	return out
}
