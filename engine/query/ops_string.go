package query

import (
	"math"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"

	"github.com/jetflow/jetflow/engine/fault"
)

// stringArg is the string parameter rule (§8.7): the empty sequence reads
// as "", a single string is itself, anything else is JQ2001.
func stringArg(v any, path string) string {
	switch x := v.(type) {
	case string:
		return x
	case emptySeq:
		return ""
	}
	throw(fault.JQ2001, "expected a string, got "+describe(v), path)
	return ""
}

// numberArg requires a single number.
func numberArg(v any, path string) float64 {
	n, ok := v.(float64)
	if !ok {
		throw(fault.JQ2001, "expected a number, got "+describe(v), path)
	}
	return n
}

// maxString bounds a string an operator may build; the reference's
// JavaScript engine stops near 2^29 code units, we stop earlier so that a
// doubling fold cannot exhaust memory.
const maxString = 1 << 24

func checkString(n int, path string) {
	if n > maxString {
		throw(fault.JQ2007, "a string result would exceed the 16 MiB resource guard", path)
	}
}

func init() {
	operators["$concat"] = nary(0, -1, func(a []arg, opPath string) getter {
		if len(a) == 0 {
			return literal("")
		}
		return func(f *frame) any {
			var b strings.Builder
			for _, x := range a {
				v := x.get(f)
				if !isEmpty(v) {
					s := castString(v, x.path)
					checkString(b.Len()+len(s), opPath)
					b.WriteString(s)
				}
			}
			f.alloc(b.Len(), opPath)
			return b.String()
		}
	})
	operators["$string-join"] = nary(1, 2, func(a []arg, opPath string) getter {
		return func(f *frame) any {
			v := a[0].get(f)
			sep := ""
			if len(a) == 2 {
				sep = stringArg(a[1].get(f), a[1].path)
			}
			var b strings.Builder
			for i, item := range itemsOf(v) {
				if i > 0 {
					b.WriteString(sep)
				}
				b.WriteString(castString(item, a[0].path))
				checkString(b.Len(), opPath)
			}
			f.alloc(b.Len(), opPath)
			return b.String()
		}
	})
	operators["$substring"] = nary(2, 3, func(a []arg, opPath string) getter {
		return func(f *frame) any {
			s := stringArg(a[0].get(f), a[0].path)
			from := jsRound(numberArg(a[1].get(f), a[1].path))
			to := math.Inf(1)
			if len(a) == 3 {
				to = from + jsRound(numberArg(a[2].get(f), a[2].path))
			}
			if from != from || to != to {
				return ""
			}
			if from <= 0 && math.IsInf(to, 1) {
				return s
			}
			var b strings.Builder
			p := 0.0
			for _, r := range s {
				if p >= to {
					break
				}
				if p >= from {
					b.WriteRune(r)
				}
				p++
			}
			f.alloc(b.Len(), opPath)
			return b.String()
		}
	})
	operators["$contains"] = stringPair(strings.Contains)
	operators["$starts-with"] = stringPair(strings.HasPrefix)
	operators["$ends-with"] = stringPair(strings.HasSuffix)
	operators["$upper"] = stringUnary(func(s string) any { return cases.Upper(language.Und).String(s) })
	operators["$lower"] = stringUnary(func(s string) any { return cases.Lower(language.Und).String(s) })
	operators["$string-length"] = stringUnary(func(s string) any { return float64(utf8.RuneCountInString(s)) })
	operators["$normalize-space"] = stringUnary(func(s string) any { return strings.Join(strings.FieldsFunc(s, isXMLSpace), " ") })
	operators["$match"] = regexTest(true)
	operators["$search"] = regexTest(false)
	operators["$replace"] = nary(3, 3, buildReplace)
}

func isXMLSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

func stringUnary(apply func(string) any) opEntry {
	return unary(func(a []arg, opPath string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := apply(stringArg(g(f), p))
			if s, ok := v.(string); ok {
				f.alloc(len(s), opPath)
			}
			return v
		}
	})
}

func stringPair(test func(s, t string) bool) opEntry {
	return nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			s := stringArg(a[0].get(f), a[0].path)
			return test(s, stringArg(a[1].get(f), a[1].path))
		}
	})
}

// regexTest is $match (anchored) / $search: an invalid I-Regexp is false.
func regexTest(full bool) opEntry {
	return nary(2, 2, func(a []arg, _ string) getter {
		cache := newRegexCache(full)
		return func(f *frame) any {
			s := stringArg(a[0].get(f), a[0].path)
			p := stringArg(a[1].get(f), a[1].path)
			re := cache.get(p)
			return re != nil && re.MatchString(s)
		}
	})
}

func buildReplace(a []arg, opPath string) getter {
	cache := newRegexCache(false)
	return func(f *frame) any {
		s := stringArg(a[0].get(f), a[0].path)
		p := stringArg(a[1].get(f), a[1].path)
		rep := stringArg(a[2].get(f), a[2].path)
		re := cache.get(p)
		if re == nil {
			throw(fault.JQ2001, "'"+p+"' is not a valid I-Regexp pattern", a[1].path)
		}
		if re.MatchString("") {
			throw(fault.JQ2001, "'$replace' pattern '"+p+"' matches the zero-length string", a[1].path)
		}
		out := re.ReplaceAllLiteralString(s, rep)
		checkString(len(out), a[0].path)
		f.alloc(len(out), opPath)
		return out
	}
}
