package query

import (
	"strconv"
	"unicode/utf16"
)

// The filter expressions of the JSONPath syntax walk (pathsyntax.go):
// logic, comparisons and function calls typed as RFC 9535 §2.4.3 and the
// reference's parser type them.

// pathFunc is a function extension's signature: its parameters' types
// ("value" or "nodes") and its result's ("value" or "logical").
type pathFunc struct {
	params  []string
	returns string
}

// pathFuncs are RFC 9535's functions, the only ones a query may call.
var pathFuncs = map[string]pathFunc{
	"length": {[]string{"value"}, "value"},
	"count":  {[]string{"nodes"}, "value"},
	"match":  {[]string{"value", "value"}, "logical"},
	"search": {[]string{"value", "value"}, "logical"},
	"value":  {[]string{"nodes"}, "value"},
}

// argKind is what a function argument is, for type-checking a call.
type argKind struct {
	kind string       // "literal", "query", "func"
	lit  any          // a literal's value
	q    *filterQuery // a query
	call *funcCall    // a function call
}

// funcCall is a function call as the walk read it.
type funcCall struct {
	name string
	args []argKind
}

// returns is the call's result type, as pathFuncs declares it.
func (c *funcCall) returns() string { return pathFuncs[c.name].returns }

// operand returns a ValueType argument as a comparable.
func (a argKind) operand() operand {
	switch a.kind {
	case "literal":
		return literalOp{a.lit}
	case "query":
		return queryOp{a.q}
	}
	return a.call.valueOp()
}

// valueOp returns a call of a ValueType function as a comparable.
func (c *funcCall) valueOp() operand {
	switch c.name {
	case "length":
		return lengthOp{c.args[0].operand()}
	case "count":
		return countOp{c.args[0].q}
	}
	return valueOp{c.args[0].q}
}

// logical returns a call of a LogicalType function (match or search) as
// a test.
func (c *funcCall) logical() filterExpr {
	full := c.name == "match"
	t := &pathRegex{input: c.args[0].operand()}
	if pat := c.args[1]; pat.kind == "literal" {
		if s, ok := pat.lit.(string); ok {
			t.re = compileIRegexp(s, full)
		}
	} else {
		t.pattern = pat.operand()
		t.cache = newRegexCache(full)
	}
	return t
}

func (p *pathScan) logicalOr() filterExpr {
	x := p.joined('|', p.logicalAnd)
	if len(x) == 1 {
		return x[0]
	}
	return orExpr(x)
}

func (p *pathScan) logicalAnd() filterExpr {
	x := p.joined('&', p.basicExpr)
	if len(x) == 1 {
		return x[0]
	}
	return andExpr(x)
}

// joined reads operands joined by a doubled op ("||", "&&"), blank space
// allowed around it; the space after the last operand is not taken.
func (p *pathScan) joined(op int, operand func() filterExpr) []filterExpr {
	out := []filterExpr{operand()}
	for {
		save := p.pos
		p.skipWS()
		if p.cc(p.pos) != op || p.cc(p.pos+1) != op {
			p.pos = save
			return out
		}
		p.pos += 2
		p.skipWS()
		out = append(out, operand())
	}
}

func (p *pathScan) basicExpr() filterExpr {
	switch p.cc(p.pos) {
	case '!':
		p.pos++
		p.skipWS()
		return notExpr{p.negatable()}
	case '(':
		return p.paren()
	default:
		return p.comparisonOrTest()
	}
}

func (p *pathScan) negatable() filterExpr {
	c := p.cc(p.pos)
	switch {
	case c == '(':
		return p.paren()
	case c == '@' || c == '$':
		return existExpr{p.filterQuery()}
	case isLowerCU(c):
		at := p.pos
		name := p.identifier()
		if p.cc(p.pos) != '(' {
			p.fail("expected a test expression after !", at)
		}
		call := p.function(name, at)
		if call.returns() == "value" {
			p.fail("a function of type ValueType cannot be used as a test expression", at)
		}
		return call.logical()
	}
	p.fail("expected a test expression after !", p.pos)
	return nil
}

func (p *pathScan) paren() filterExpr {
	p.pos++
	p.skipWS()
	x := p.logicalOr()
	p.skipWS()
	if p.cc(p.pos) != ')' {
		p.fail("expected ')'", p.pos)
	}
	p.pos++
	return x
}

// compOp reads a comparison operator, opNone when there is none.
func (p *pathScan) compOp() cmpOp {
	switch p.cc(p.pos) {
	case '=':
		if p.cc(p.pos+1) != '=' {
			p.fail("expected '=='", p.pos)
		}
		p.pos += 2
		return opEq
	case '!':
		if p.cc(p.pos+1) != '=' {
			return opNone
		}
		p.pos += 2
		return opNe
	case '<', '>':
		ops := [2]cmpOp{opLt, opLe}
		if p.cc(p.pos) == '>' {
			ops = [2]cmpOp{opGt, opGe}
		}
		p.pos++
		if p.cc(p.pos) == '=' {
			p.pos++
			return ops[1]
		}
		return ops[0]
	}
	return opNone
}

// filterQuery reads a query from '@' or '$', its segments and filters
// the walk's.
func (p *pathScan) filterQuery() *filterQuery {
	q := &filterQuery{relative: p.cc(p.pos) == '@'}
	p.pos++
	q.path = pathOfSegments(p.segments())
	return q
}

func (p *pathScan) requireSingular(singular bool, at int, what string) {
	if !singular {
		p.fail(what+" requires a singular query", at)
	}
}

func (p *pathScan) comparisonOrTest() filterExpr {
	at := p.pos
	c := p.cc(p.pos)
	switch {
	case c == '@' || c == '$':
		q := p.filterQuery()
		save := p.pos
		p.skipWS()
		op := p.compOp()
		if op == opNone {
			p.pos = save
			return existExpr{q}
		}
		p.requireSingular(q.singular(), at, "a comparison")
		p.skipWS()
		return &cmpExpr{op: op, left: queryOp{q}, right: p.comparable()}
	case c == '\'' || c == '"' || c == '-' || isDigitCU(c):
		return p.literalCompared(at, p.literal())
	case isLowerCU(c):
		name := p.identifier()
		if p.cc(p.pos) == '(' {
			call := p.function(name, at)
			save := p.pos
			p.skipWS()
			op := p.compOp()
			if op == opNone {
				p.pos = save
				if call.returns() == "value" {
					p.fail("a function of type ValueType cannot be used as a test expression", at)
				}
				return call.logical()
			}
			if call.returns() != "value" {
				p.fail("only functions of type ValueType can be compared", at)
			}
			p.skipWS()
			return &cmpExpr{op: op, left: call.valueOp(), right: p.comparable()}
		}
		if lit, ok := keywordLiteral(name); ok {
			return p.literalCompared(at, lit)
		}
		p.fail("unexpected identifier '"+name+"'", at)
	}
	p.fail("expected a filter expression", p.pos)
	return nil
}

// keywordLiteral returns the value of true, false or null.
func keywordLiteral(name string) (any, bool) {
	switch name {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return nil, true
	}
	return nil, false
}

// literalCompared reads what follows a literal in a filter: a literal
// stands only as the left side of a comparison.
func (p *pathScan) literalCompared(at int, lit any) filterExpr {
	p.skipWS()
	op := p.compOp()
	if op == opNone {
		p.fail("a literal must be part of a comparison", at)
	}
	p.skipWS()
	return &cmpExpr{op: op, left: literalOp{lit}, right: p.comparable()}
}

func (p *pathScan) literal() any {
	if c := p.cc(p.pos); c == '\'' || c == '"' {
		return p.stringLiteral()
	}
	return p.numberLiteral()
}

func (p *pathScan) comparable() operand {
	at := p.pos
	c := p.cc(p.pos)
	switch {
	case c == '@' || c == '$':
		q := p.filterQuery()
		p.requireSingular(q.singular(), at, "a comparison")
		return queryOp{q}
	case c == '\'' || c == '"' || c == '-' || isDigitCU(c):
		return literalOp{p.literal()}
	case isLowerCU(c):
		name := p.identifier()
		if p.cc(p.pos) == '(' {
			call := p.function(name, at)
			if call.returns() != "value" {
				p.fail("only functions of type ValueType can be compared", at)
			}
			return call.valueOp()
		}
		if lit, ok := keywordLiteral(name); ok {
			return literalOp{lit}
		}
		p.fail("unexpected identifier '"+name+"'", at)
	}
	p.fail("expected a comparable expression", p.pos)
	return nil
}

func (p *pathScan) functionArg() argKind {
	at := p.pos
	c := p.cc(p.pos)
	switch {
	case c == '@' || c == '$':
		return argKind{kind: "query", q: p.filterQuery()}
	case c == '\'' || c == '"' || c == '-' || isDigitCU(c):
		return argKind{kind: "literal", lit: p.literal()}
	case isLowerCU(c):
		name := p.identifier()
		if p.cc(p.pos) == '(' {
			return argKind{kind: "func", call: p.function(name, at)}
		}
		if lit, ok := keywordLiteral(name); ok {
			return argKind{kind: "literal", lit: lit}
		}
		p.fail("unexpected identifier '"+name+"'", at)
	}
	p.fail("expected a function argument", p.pos)
	return argKind{}
}

// function reads a call of name, whose name starts at at, with p at its
// '(', type-checks its arguments and returns the call.
func (p *pathScan) function(name string, at int) *funcCall {
	def, ok := pathFuncs[name]
	if !ok {
		p.fail("unknown function '"+name+"'", at)
	}
	p.pos++
	p.skipWS()
	var args []argKind
	if p.cc(p.pos) != ')' {
		for {
			// (no built-in function takes a LogicalType argument)
			args = append(args, p.functionArg())
			p.skipWS()
			if p.cc(p.pos) != ',' {
				break
			}
			p.pos++
			p.skipWS()
		}
	}
	if p.cc(p.pos) != ')' {
		p.fail("expected ')'", p.pos)
	}
	p.pos++
	if len(args) != len(def.params) {
		p.fail("function '"+name+"' expects "+strconv.Itoa(len(def.params))+" argument(s), got "+
			strconv.Itoa(len(args)), at)
	}
	for i, arg := range args {
		nth := "argument " + strconv.Itoa(i+1) + " of '" + name + "'"
		switch def.params[i] {
		case "value":
			switch {
			case arg.kind == "literal", arg.kind == "func" && arg.call.returns() == "value":
			case arg.kind == "query":
				p.requireSingular(arg.q.singular(), at, nth)
			default:
				p.fail(nth+" must be of type ValueType", at)
			}
		case "nodes":
			// (no built-in function returns NodesType)
			if arg.kind != "query" {
				p.fail(nth+" must be a query (NodesType)", at)
			}
		}
	}
	return &funcCall{name: name, args: args}
}

// numberValue is a number literal's value as JavaScript's Number reads
// it: past float64's range it is ±Infinity, not an error.
func numberValue(units []uint16) float64 {
	// the walk took the literal: ParseFloat fails only out of range
	f, _ := strconv.ParseFloat(string(utf16.Decode(units)), 64)
	return f
}
