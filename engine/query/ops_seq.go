package query

import (
	"math"
	"slices"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// rangeLimit is the $range materialization ceiling (§8.9).
const rangeLimit = 1000000

const maxSafeInteger = 1<<53 - 1

// ---- §8.8 aggregates

func init() {
	operators["$count"] = unary(func(a []arg, _ string) getter {
		g := a[0].get
		return func(f *frame) any { return float64(seqLen(g(f))) }
	})
	operators["$sum"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			total, n, first := sumItems(g(f), p)
			switch n {
			case 0:
				return 0.0
			case 1:
				return first
			}
			return total
		}
	})
	operators["$avg"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			total, n, first := sumItems(g(f), p)
			switch n {
			case 0:
				return empty
			case 1:
				return first
			}
			return total / float64(n)
		}
	})
	operators["$min"] = minMax(false)
	operators["$max"] = minMax(true)
}

func sumItems(v any, path string) (total float64, n int, first float64) {
	for i, item := range itemsOf(v) {
		x, ok := item.(float64)
		if !ok {
			throw(fault.JQ2001, "aggregate items must be numbers, got "+describe(item), path)
		}
		if i == 0 {
			first = x
		}
		total += x
		n++
	}
	return total, n, first
}

func minMax(isMax bool) opEntry {
	return unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			items := itemsOf(g(f))
			if len(items) == 0 {
				return empty
			}
			var best any
			sawNaN := false
			for i, item := range items {
				var order int
				switch x := item.(type) {
				case float64:
					if i > 0 {
						if _, ok := items[0].(float64); !ok {
							throw(fault.JQ2001, "'$min'/'$max' items must be all numbers or all strings, got "+describe(item), p)
						}
						b := best.(float64)
						if x > b {
							order = 1
						} else if x < b {
							order = -1
						}
					}
					if x != x {
						sawNaN = true
					}
				case string:
					if i > 0 {
						if _, ok := items[0].(string); !ok {
							throw(fault.JQ2001, "'$min'/'$max' items must be all numbers or all strings, got "+describe(item), p)
						}
						order = compareCodePoints(x, best.(string))
					}
				default:
					throw(fault.JQ2001, "'$min'/'$max' items must be all numbers or all strings, got "+describe(item), p)
				}
				if i == 0 || (isMax && order > 0) || (!isMax && order < 0) {
					best = item
				}
			}
			if sawNaN {
				return math.NaN()
			}
			return best
		}
	})
}

// ---- §8.9 sequence operators

func init() {
	operators["$distinct"] = unary(func(a []arg, opPath string) getter {
		g := a[0].get
		return func(f *frame) any {
			v := g(f)
			m, ok := v.(*multi)
			if !ok {
				return v
			}
			seen := make(map[string]bool, len(m.items()))
			out := make([]any, 0, len(m.items()))
			f.allocItems(len(m.items()), opPath)
			f.chargeObject(len(m.items()), opPath)
			for _, item := range m.items() {
				k := stableKeyString(item)
				f.alloc(len(k), opPath)
				if !seen[k] {
					seen[k] = true
					out = append(out, item)
				}
			}
			return seqOf(out)
		}
	})
	operators["$reverse"] = unary(func(a []arg, opPath string) getter {
		g := a[0].get
		return func(f *frame) any {
			v := g(f)
			m, ok := v.(*multi)
			if !ok {
				return v
			}
			f.allocItems(len(m.items()), opPath)
			out := slices.Clone(m.items())
			slices.Reverse(out)
			return seqOf(out)
		}
	})
	operators["$sort"] = unary(func(a []arg, opPath string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			items := itemsOf(v)
			if len(items) == 0 {
				return empty
			}
			_, numeric := items[0].(float64)
			for _, item := range items {
				_, isNum := item.(float64)
				_, isStr := item.(string)
				if (numeric && !isNum) || (!numeric && !isStr) {
					throw(fault.JQ2005, "'$sort' items must be all numbers or all strings, got "+describe(item), p)
				}
			}
			if len(items) == 1 {
				return v
			}
			f.allocItems(len(items), opPath)
			out := slices.Clone(items)
			if numeric {
				slices.SortStableFunc(out, func(x, y any) int { return compareNumberKeys(x.(float64), y.(float64)) })
			} else {
				slices.SortStableFunc(out, func(x, y any) int { return compareCodePoints(x.(string), y.(string)) })
			}
			return seqOf(out)
		}
	})
	operators["$head"] = unary(func(a []arg, _ string) getter {
		g := a[0].get
		return func(f *frame) any { return firstItem(g(f)) }
	})
	operators["$tail"] = unary(func(a []arg, _ string) getter {
		g := a[0].get
		return func(f *frame) any {
			m, ok := g(f).(*multi)
			if !ok {
				return empty
			}
			return seqOf(m.items()[1:])
		}
	})
	operators["$subsequence"] = nary(2, 3, func(a []arg, _ string) getter {
		return func(f *frame) any {
			v := a[0].get(f)
			from := jsRound(numberArg(a[1].get(f), a[1].path))
			to := math.Inf(1)
			if len(a) == 3 {
				to = from + jsRound(numberArg(a[2].get(f), a[2].path))
			}
			if isEmpty(v) || from != from || to != to {
				return empty
			}
			items := itemsOf(v)
			lo := math.Max(from, 0)
			hi := math.Min(to, float64(len(items)))
			if lo >= hi {
				return empty
			}
			return seqOf(items[int(lo):int(hi)])
		}
	})
	operators["$index-of"] = nary(2, 2, func(a []arg, opPath string) getter {
		return func(f *frame) any {
			v := a[0].get(f)
			target := a[1].get(f)
			switch target.(type) {
			case emptySeq, *multi:
				throw(fault.JQ2001, "'$index-of' takes a single search item, got "+describe(target), a[1].path)
			}
			var out []any
			for i, item := range itemsOf(v) {
				if value.Equal(item, target) {
					out = append(out, float64(i))
				}
			}
			f.allocItems(len(out), opPath)
			return seqOf(out)
		}
	})
	operators["$range"] = nary(2, 2, func(a []arg, opPath string) getter {
		return func(f *frame) any {
			x := a[0].get(f)
			y := a[1].get(f)
			if isEmpty(x) || isEmpty(y) {
				return empty
			}
			lo := rangeBound(x, a[0].path)
			hi := rangeBound(y, a[1].path)
			if lo > hi {
				return empty
			}
			limit := float64(rangeLimit)
			if f.lim.SequenceItems > 0 && f.lim.SequenceItems < rangeLimit {
				limit = float64(f.lim.SequenceItems)
			}
			n := hi - lo + 1
			if n > limit {
				throw(fault.JQ2007, "'$range' of "+value.NumberString(n)+" items exceeds the "+
					strconv.Itoa(int(limit))+"-item resource guard", opPath)
			}
			f.charge(int(n), opPath)
			out := make([]any, int(n))
			for i := range out {
				out[i] = lo + float64(i)
			}
			return seqOf(out)
		}
	})
	operators["$get"] = nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			target := a[0].get(f)
			key := a[1].get(f)
			switch k := key.(type) {
			case string:
				if v, ok := value.Member(target, k); ok {
					return v
				}
			case float64:
				if arr, ok := target.([]any); ok && k == math.Trunc(k) && !math.IsInf(k, 0) {
					i := k
					if i < 0 {
						i += float64(len(arr))
					}
					if i >= 0 && i < float64(len(arr)) {
						return arr[int(i)]
					}
				}
			}
			return empty
		}
	})
	operators["$entries"] = unary(func(a []arg, opPath string) getter {
		g := a[0].get
		return func(f *frame) any {
			var out []any
			for _, item := range itemsOf(g(f)) {
				keys, ok := value.Ordered(item)
				if !ok {
					continue
				}
				for _, k := range keys {
					f.chargeObject(2, opPath)
					v, _ := value.Member(item, k)
					out = append(out, map[string]any{"key": k, "value": v})
				}
			}
			f.allocItems(len(out), opPath)
			return seqOf(out)
		}
	})
	operators["$from-entries"] = unary(func(a []arg, opPath string) getter {
		g := a[0].get
		return func(f *frame) any {
			items := itemsOf(g(f))
			if !f.keep {
				return entriesMap(f, items, opPath)
			}
			out := value.NewObject(len(items))
			f.built = true
			var proto protoSetter
			for _, item := range items {
				if k, v, ok := entryMember(item); ok && !proto.takes(k, v) {
					out.Set(k, v)
				}
			}
			f.chargeObject(out.Len(), opPath)
			return out
		}
	})
}

// entriesMap builds $from-entries as a map, for an evaluation where its
// member order cannot show.
func entriesMap(f *frame, items []any, opPath string) any {
	out := make(map[string]any, len(items))
	var proto protoSetter
	for _, item := range items {
		if k, v, ok := entryMember(item); ok && !proto.takes(k, v) {
			out[k] = v
		}
	}
	f.chargeObject(len(out), opPath)
	return out
}

// protoSetter mirrors what the reference's member assignment does with
// the key "__proto__": while the object inherits JavaScript's __proto__
// setter, assigning that name sets the prototype (an object or null) or
// does nothing (anything else), and makes no member that JSON or a path
// read shows; a null prototype removes the setter, so a later entry of
// that name is an ordinary member.
type protoSetter struct{ gone bool }

// takes reports whether the entry k, v goes to the setter, not a member.
func (p *protoSetter) takes(k string, v any) bool {
	if k != "__proto__" || p.gone {
		return false
	}
	p.gone = v == nil
	return true
}

// entryMember reads one {"key", "value"} entry of $from-entries; an entry
// whose key is not a string is skipped, a missing value is null.
func entryMember(item any) (string, any, bool) {
	key, _ := value.Member(item, "key")
	k, ok := key.(string)
	if !ok {
		return "", nil, false
	}
	v, ok := value.Member(item, "value")
	if !ok {
		v = nil
	}
	return k, v, true
}

func rangeBound(v any, path string) float64 {
	n, ok := v.(float64)
	if !ok || n != math.Trunc(n) || math.Abs(n) > maxSafeInteger {
		throw(fault.JQ2001, "'$range' bounds must be safe integers, got "+describe(v), path)
	}
	return n
}
