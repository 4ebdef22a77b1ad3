package fault

// JSLT stylesheet compile codes (JT0xxx) and runtime codes (JT2xxx), as
// JSLT-FORMAT §10.2 of @jarenjs/json declares them.
const (
	JT0001 Code = "JT0001"
	JT0002 Code = "JT0002"
	JT0003 Code = "JT0003"
	JT0004 Code = "JT0004"
	JT0005 Code = "JT0005"
	JT0006 Code = "JT0006"
	JT0007 Code = "JT0007"
	JT2001 Code = "JT2001"
	JT2002 Code = "JT2002"
	JT2003 Code = "JT2003"
	JT2004 Code = "JT2004"
)

func init() {
	for c, m := range jsltMeanings {
		meanings[c] = m
	}
}

var jsltMeanings = map[Code]string{
	JT0001: "stylesheet shape: not an array or envelope, missing rules, unknown member, bad unmatched",
	JT0002: "rule shape: not an object, missing body, unknown member, mode or priority of the wrong type",
	JT0003: "match: invalid shape or empty object, or a path that is not RFC 9535",
	JT0004: "unknown $jslt version",
	JT0005: "schema match rejected by the type-test compiler",
	JT0006: "schema match without a type-test compiler",
	JT0007: "a rule body failed to compile",
	JT2001: "dispatch depth exceeded maxDepth",
	JT2002: "built-in rebuild: an object member's dispatch produced two or more items",
	JT2003: "unmatched value under the error disposition",
	JT2004: "a rule body raised a runtime error",
}
