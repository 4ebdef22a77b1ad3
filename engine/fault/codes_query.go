package fault

// Query compile codes (JQ0xxx) and runtime codes (JQ2xxx), as the reference
// declares them in QUERY-FORMAT §10.
const (
	JQ0001 Code = "JQ0001"
	JQ0002 Code = "JQ0002"
	JQ0003 Code = "JQ0003"
	JQ0004 Code = "JQ0004"
	JQ0005 Code = "JQ0005"
	JQ0006 Code = "JQ0006"
	JQ0007 Code = "JQ0007"
	JQ0008 Code = "JQ0008"
	JQ0009 Code = "JQ0009"
	JQ0010 Code = "JQ0010"
	JQ0011 Code = "JQ0011"
	JQ0012 Code = "JQ0012"
	JQ0013 Code = "JQ0013"
	JQ0014 Code = "JQ0014"
	JQ0015 Code = "JQ0015"
	JQ2001 Code = "JQ2001"
	JQ2002 Code = "JQ2002"
	JQ2003 Code = "JQ2003"
	JQ2004 Code = "JQ2004"
	JQ2005 Code = "JQ2005"
	JQ2006 Code = "JQ2006"
	JQ2007 Code = "JQ2007"
	JQ2008 Code = "JQ2008"
	JQ2009 Code = "JQ2009"
	JQ2010 Code = "JQ2010"
	JQ2011 Code = "JQ2011"
	JQ2012 Code = "JQ2012"
	JQ2013 Code = "JQ2013"
	JQ2014 Code = "JQ2014"
	JQ2015 Code = "JQ2015"
)

func init() {
	for c, m := range queryMeanings {
		meanings[c] = m
	}
}

var queryMeanings = map[Code]string{
	JQ0001: "object mixes $-prefixed and plain keys",
	JQ0002: "unknown operator or $-key outside the vocabulary",
	JQ0003: "known phrase with bad arity, value shape, or key combination",
	JQ0004: "string starting $ is not a valid path or escape",
	JQ0005: "variable reference neither bound nor a declared external",
	JQ0006: "version envelope with unknown or non-string $query",
	JQ0007: "duplicate variable binding within one phrase",
	JQ0008: "schema operator in a query compiled without a type-test compiler",
	JQ0009: "schema literal rejected by the type-test compiler",
	JQ0010: "$call/$collation naming no registered function/collation",
	JQ0011: "expression nesting deeper than limits.depth",
	JQ0012: "lexical provider missing or request declaration rejected",
	JQ0013: "invalid versioned formula profile",
	JQ0014: "missing or incompatible formula capability",
	JQ0015: "invalid computed dependency graph",
	JQ2001: "runtime type error",
	JQ2002: "$idiv/$mod by zero",
	JQ2003: "EBV of a multi-item sequence",
	JQ2004: "$map key expression not a single string",
	JQ2005: "incomparable $orderby/$sort keys",
	JQ2006: "reference to an unbound external parameter",
	JQ2007: "resource guard: an operator result exceeding an implementation limit",
	JQ2008: "schema assertion failure",
	JQ2009: "an execution limit exceeded",
	JQ2010: "a registered $call function threw",
	JQ2011: "the input document is undefined",
	JQ2012: "lexical provider threw or returned an invalid result",
	JQ2013: "formula input or result is not valid JSON/schema data",
	JQ2014: "invalid formula outcome",
	JQ2015: "invalid reviewed rule plan",
}
