package query

import (
	"strings"
	"unicode/utf16"

	"github.com/jetflow/jetflow/engine/fault"
)

// otherKnown are vocabulary keys handled outside the operator table.
var otherKnown = setOf("$const", "$map")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// aliases are the reference's "did you mean" hints for names writers
// bring from other languages; "" means no operator does this.
var aliases = map[string]string{
	"$first": "$head", "$last": "$head of $reverse", "$nth": "$get", "$at": "$get",
	"$take": "$subsequence", "$skip": "$subsequence", "$slice": "$subsequence",
	"$drop": "$subsequence", "$limit": "$subsequence",
	"$filter": "a JSONPath filter like $[?(@.x > 1)] or $where in a $for",
	"$select": "a $for phrase with $return", "$flatmap": "a $for phrase",
	"$reduce": "$fold", "$foldl": "$fold", "$aggregate": "$fold",
	"$group": "$groupby", "$group-by": "$groupby",
	"$sortby":  "$sort (sorts scalars; order objects via a $for over a sorted key)",
	"$sort-by": "$sort (scalars only)", "$order": "$sort",
	"$size": "$count", "$len": "$length", "$abs": "", "$round": "", "$floor": "$idiv",
	"$ceil": "", "$sqrt": "", "$pow": "", "$modulo": "$mod", "$remainder": "$mod",
	"$subtract": "$sub", "$multiply": "$mul", "$divide": "$div", "$minus": "$sub",
	"$times": "$mul", "$negate": "$neg", "$product": "$mul", "$total": "$sum",
	"$join": "$string-join", "$split": "", "$includes": "$contains",
	"$indexof": "$index-of", "$find": "$index-of", "$keys": "$entries",
	"$values": "$entries then $get", "$has": "$exists", "$tostring": "$string",
	"$tonumber": "$number", "$len_str": "$string-length", "$trim": "$normalize-space",
	"$lowercase": "$lower", "$uppercase": "$upper", "$startswith": "$starts-with",
	"$endswith": "$ends-with", "$unique": "$distinct", "$flatten": "a $for phrase",
	"$case": "$if", "$cond": "$if", "$switch": "$if", "$ternary": "$if",
	"$ifnull": "$default", "$ifempty": "$default", "$nvl": "$default",
	"$wkt":       "$geo-parse to read one, $geo-text to write one",
	"$parse-wkt": "$geo-parse", "$from-wkt": "$geo-parse", "$st_geomfromtext": "$geo-parse",
	"$to-wkt": "$geo-text", "$st_astext": "$geo-text", "$geo-stringify": "$geo-text",
	"$geohash-decode": "$geohash-bounds", "$geohash-bbox": "$geohash-bounds",
	"$geohash-neighbors": "$geohash-neighbours", "$geohash-adjacent": "$geohash-neighbours",
	"$simplify": "$geo-simplify", "$douglas-peucker": "$geo-simplify",
	"$intersects": "$bbox-intersects (boxes only — real overlay is deliberately absent)",
	"$buffer":     "", "$union": "", "$difference": "",
	"$project":     "the renderer — the language cannot make a projected coordinate at all, so a measurement can never land on one; measurement here is geodesic",
	"$geo-project": "the renderer, as for '$project'",
	"$srid":        "", "$transform": "",
	"$cosine": "$similarity", "$cosine-similarity": "$similarity",
	"$cos-sim": "$similarity", "$dot-product": "$similarity",
	"$dot": "$similarity", "$inner-product": "$similarity",
	"$vector-distance":    "$similarity (higher is closer; there is no distance metric)",
	"$l2-distance":        "$similarity (higher is closer; there is no distance metric)",
	"$knn":                "$orderby on a $similarity key with $dir 'desc', then $subsequence for the k",
	"$nearest":            "$orderby on a $similarity key with $dir 'desc', then $subsequence for the k",
	"$nearest-neighbours": "$orderby on a $similarity key, then $subsequence",
	"$nearest-neighbors":  "$orderby on a $similarity key, then $subsequence",
	"$top-k":              "$orderby then $subsequence", "$embed": "", "$normalize": "",
	"$time_bucket": "$time-bucket", "$date-bin": "$time-bucket",
	"$date_bin": "$time-bucket", "$bucket": "$time-bucket",
	"$time-bucket-gapfill": "$resample with a 'fill'",
	"$gapfill":             "$resample with a 'fill'", "$locf": "$resample with fill 'locf'",
	"$interpolate": "$resample with fill 'linear'",
	"$downsample":  "$resample", "$upsample": "$resample with a 'fill'",
	"$rollup": "$resample", "$groupbytime": "$resample",
	"$moving-average": "$rolling with aggregate 'mean'",
	"$rollingwindow":  "$rolling", "$time-window": "$rolling",
	"$as-of": "$asof", "$asof-join": "$asof", "$aj": "$asof",
	"$merge-asof": "$asof", "$latest-at": "$asof",
	"$overlap": "$overlaps", "$interval-overlaps": "$overlaps",
	"$during": "$overlaps", "$meets": "", "$abuts": "",
	"$now": "", "$current-timestamp": "",
}

// vocabularyOrder lists the reference's candidate names in its order
// (FLWOR keys, quantifier keys, escapes, then the operator registry), so
// the nearest-name suggestion breaks ties the same way.
var vocabularyOrder = strings.Fields(`$fold $for $let $as $where $groupby $orderby $count $return
$some $every $satisfies $const $map
$seq $exists $empty $if $eq $ne $lt $le $gt $ge $add $sub $mul $div $idiv $mod $neg $and $or $not
$concat $string-join $substring $contains $starts-with $ends-with $upper $lower $string-length
$normalize-space $match $search $replace $count $sum $avg $min $max $distinct $reverse $sort $head
$tail $subsequence $index-of $range $get $entries $from-entries $is-string $is-number $is-boolean
$is-null $is-array $is-object $string $number $boolean $coalesce $default $valid $assert
$is-date $is-time $is-datetime $is-duration $bbox $area $length $centroid $distance $within
$bbox-intersects $geohash $geo-parse $geo-text $geohash-bounds $geohash-neighbours $geo-simplify
$similarity $date-add $date-sub $start-of $end-of $date-diff $date-format $week $week-year $quarter
$weekday $year $month $day $hours $minutes $seconds $offset $epoch $datetime $overlaps $time-bucket
$resample $rolling $asof`)

// failUnknown raises JQ0002 with the reference's suggestion.
func failUnknown(key, path string) {
	if target, ok := aliases[key]; ok {
		hint := " (no operator does this in jaren-query)"
		if target != "" {
			if strings.HasPrefix(target, "$") && !strings.Contains(target, " ") {
				hint = " (use '" + target + "')"
			} else {
				hint = " (use " + target + ")"
			}
		}
		fail(fault.JQ0002, "unknown operator '"+key+"'"+hint, path)
	}
	best, bestDist := "", 3
	for _, name := range vocabularyOrder {
		d := len(utf16Units(key)) - len(utf16Units(name))
		if d > 2 || d < -2 {
			continue
		}
		if dist := levenshtein(key, name); dist < bestDist {
			best, bestDist = name, dist
		}
	}
	hint := ""
	if best != "" {
		hint = " (did you mean '" + best + "'?)"
	}
	fail(fault.JQ0002, "unknown operator '"+key+"'"+hint, path)
}

// levenshtein over UTF-16 code units, as the reference measures.
func levenshtein(a, b string) int {
	x, y := utf16Units(a), utf16Units(b)
	prev := make([]int, len(y)+1)
	curr := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		curr[0] = i
		for j := 1; j <= len(y); j++ {
			sub := prev[j-1]
			if x[i-1] != y[j-1] {
				sub++
			}
			curr[j] = min(prev[j]+1, curr[j-1]+1, sub)
		}
		prev, curr = curr, prev
	}
	return prev[len(y)]
}

func utf16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }
