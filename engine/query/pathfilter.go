package query

import "strconv"

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
	kind     string // "literal", "query", "func"
	singular bool   // a singular query
	returns  string // a function's result type
}

func (p *pathScan) logicalOr() { p.joined('|', p.logicalAnd) }

func (p *pathScan) logicalAnd() { p.joined('&', p.basicExpr) }

// joined reads operands joined by a doubled op ("||", "&&"), blank space
// allowed around it; the space after the last operand is not taken.
func (p *pathScan) joined(op int, operand func()) {
	operand()
	for {
		save := p.pos
		p.skipWS()
		if p.cc(p.pos) != op || p.cc(p.pos+1) != op {
			p.pos = save
			return
		}
		p.pos += 2
		p.skipWS()
		operand()
	}
}

func (p *pathScan) basicExpr() {
	switch p.cc(p.pos) {
	case '!':
		p.pos++
		p.skipWS()
		p.negatable()
	case '(':
		p.paren()
	default:
		p.comparisonOrTest()
	}
}

func (p *pathScan) negatable() {
	c := p.cc(p.pos)
	switch {
	case c == '(':
		p.paren()
		return
	case c == '@' || c == '$':
		p.filterQuery()
		return
	case isLowerCU(c):
		at := p.pos
		name := p.identifier()
		if p.cc(p.pos) != '(' {
			p.fail("expected a test expression after !", at)
		}
		if p.function(name, at) == "value" {
			p.fail("a function of type ValueType cannot be used as a test expression", at)
		}
		return
	}
	p.fail("expected a test expression after !", p.pos)
}

func (p *pathScan) paren() {
	p.pos++
	p.skipWS()
	p.logicalOr()
	p.skipWS()
	if p.cc(p.pos) != ')' {
		p.fail("expected ')'", p.pos)
	}
	p.pos++
}

// compOp reads a comparison operator and reports whether there was one.
func (p *pathScan) compOp() bool {
	switch p.cc(p.pos) {
	case '=':
		if p.cc(p.pos+1) != '=' {
			p.fail("expected '=='", p.pos)
		}
		p.pos += 2
	case '!':
		if p.cc(p.pos+1) != '=' {
			return false
		}
		p.pos += 2
	case '<', '>':
		p.pos++
		if p.cc(p.pos) == '=' {
			p.pos++
		}
	default:
		return false
	}
	return true
}

// filterQuery reads a query from '@' or '$' and reports whether it is
// singular.
func (p *pathScan) filterQuery() bool {
	p.pos++
	return p.segments()
}

func (p *pathScan) requireSingular(singular bool, at int, what string) {
	if !singular {
		p.fail(what+" requires a singular query", at)
	}
}

func (p *pathScan) comparisonOrTest() {
	at := p.pos
	c := p.cc(p.pos)
	switch {
	case c == '@' || c == '$':
		singular := p.filterQuery()
		save := p.pos
		p.skipWS()
		if !p.compOp() {
			p.pos = save
			return
		}
		p.requireSingular(singular, at, "a comparison")
		p.skipWS()
		p.comparable()
		return
	case c == '\'' || c == '"' || c == '-' || isDigitCU(c):
		p.literal()
		p.literalCompared(at)
		return
	case isLowerCU(c):
		name := p.identifier()
		if p.cc(p.pos) == '(' {
			returns := p.function(name, at)
			save := p.pos
			p.skipWS()
			if !p.compOp() {
				p.pos = save
				if returns == "value" {
					p.fail("a function of type ValueType cannot be used as a test expression", at)
				}
				return
			}
			if returns != "value" {
				p.fail("only functions of type ValueType can be compared", at)
			}
			p.skipWS()
			p.comparable()
			return
		}
		if name == "true" || name == "false" || name == "null" {
			p.literalCompared(at)
			return
		}
		p.fail("unexpected identifier '"+name+"'", at)
	}
	p.fail("expected a filter expression", p.pos)
}

// literalCompared reads what follows a literal in a filter: a literal
// stands only as the left side of a comparison.
func (p *pathScan) literalCompared(at int) {
	p.skipWS()
	if !p.compOp() {
		p.fail("a literal must be part of a comparison", at)
	}
	p.skipWS()
	p.comparable()
}

func (p *pathScan) literal() {
	if c := p.cc(p.pos); c == '\'' || c == '"' {
		p.stringLiteral()
		return
	}
	p.numberLiteral()
}

func (p *pathScan) comparable() {
	at := p.pos
	c := p.cc(p.pos)
	switch {
	case c == '@' || c == '$':
		p.requireSingular(p.filterQuery(), at, "a comparison")
		return
	case c == '\'' || c == '"' || c == '-' || isDigitCU(c):
		p.literal()
		return
	case isLowerCU(c):
		name := p.identifier()
		if p.cc(p.pos) == '(' {
			if p.function(name, at) != "value" {
				p.fail("only functions of type ValueType can be compared", at)
			}
			return
		}
		if name == "true" || name == "false" || name == "null" {
			return
		}
		p.fail("unexpected identifier '"+name+"'", at)
	}
	p.fail("expected a comparable expression", p.pos)
}

func (p *pathScan) functionArg() argKind {
	at := p.pos
	c := p.cc(p.pos)
	switch {
	case c == '@' || c == '$':
		return argKind{kind: "query", singular: p.filterQuery()}
	case c == '\'' || c == '"' || c == '-' || isDigitCU(c):
		p.literal()
		return argKind{kind: "literal"}
	case isLowerCU(c):
		name := p.identifier()
		if p.cc(p.pos) == '(' {
			return argKind{kind: "func", returns: p.function(name, at)}
		}
		if name == "true" || name == "false" || name == "null" {
			return argKind{kind: "literal"}
		}
		p.fail("unexpected identifier '"+name+"'", at)
	}
	p.fail("expected a function argument", p.pos)
	return argKind{}
}

// function reads a call of name, whose name starts at at, with p at its
// '(', type-checks its arguments and returns its result type.
func (p *pathScan) function(name string, at int) string {
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
			case arg.kind == "literal", arg.kind == "func" && arg.returns == "value":
			case arg.kind == "query":
				p.requireSingular(arg.singular, at, nth)
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
	return def.returns
}
