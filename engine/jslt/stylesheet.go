// Package jslt compiles and runs Jaren JSLT 0.1 stylesheets (JSLT-FORMAT.md
// of @jarenjs/json 0.91.4): ordered template rules whose bodies are query
// documents extended with $apply, dispatched recursively over a value. It
// is what a DAG's jslt node runs.
//
// Stylesheets are compiled as the reference's DAG compiles them: with no
// type-test compiler, so a schema match is JT0006 and a schema operator in
// a body JQ0008 (JT0007), and with no stylesheet parameters bound.
package jslt

import (
	"math"
	"slices"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// MaxDepth is the dispatch nesting depth a transformation may reach
// (JSLT-FORMAT §5.4, the reference's default).
const MaxDepth = 1024

// dispositions of an unmatched value (§5)
const (
	share            = "share"
	fresh            = "fresh"
	errorDisposition = "error"
)

// Stylesheet is a compiled stylesheet, safe for concurrent use.
type Stylesheet struct {
	doc      any
	rules    []*rule
	modes    map[string]*mode
	modeList []*mode // in the order they were made
	root     *mode
	needsLoc bool // some rule matches by path or some body reads $path
	// externals are the user parameters, in order of first appearance
	externals []string
	// the stylesheet's disposition and the modes the envelope declares
	unmatched, unmatchedPath string
	declared                 map[string]*mode
}

type rule struct {
	index       int
	docPath     string
	bodyDocPath string
	mode        *mode
	priority    float64
	pathSrc     string
	pathDocPath string
	hasPath     bool
	path        *query.Path
	hasSchema   bool
	schemaPath  string
	ordinal     int // the rule's path ordinal within its mode
	rawBody     any
	body        *query.Query
}

type mode struct {
	ord           int // its place in modeList
	name          string
	unmatched     string
	unmatchedPath string
	rules         []*rule // ranked: priority, then later rules first
	paths         []*rule // the rules that match by path, by ordinal
	// pruned: a share mode whose every rule needs a position, so a value
	// off the way to a location one of its own rules selects is returned
	// as it is (what the other modes' rules select does not count)
	pruned bool
}

// Compile compiles a stylesheet: a bare rule array, or the envelope
// {"$jslt": "0.1", "rules": [...], "unmatched"?, "modes"?}. It checks
// in the reference's order (the whole shape first, then each rule's
// path, schema and body), so the first error is the reference's.
func Compile(doc any) (*Stylesheet, error) {
	s := &Stylesheet{doc: doc, modes: map[string]*mode{}}
	read, _ := value.WithoutProto(doc)
	if err := s.normalize(read); err != nil {
		return nil, err
	}
	if err := s.compileRules(); err != nil {
		return nil, err
	}
	return s, nil
}

// Doc returns the document the stylesheet was compiled from.
func (s *Stylesheet) Doc() any { return s.doc }

// Externals lists the stylesheet's parameters (root and path excluded).
func (s *Stylesheet) Externals() []string { return slices.Clone(s.externals) }

func isDisposition(v any) bool { return v == share || v == fresh || v == errorDisposition }

func idx(base string, i int) string { return base + "/" + strconv.Itoa(i) }

func ptr(base, seg string) string { return base + "/" + value.EncodePointerSegment(seg) }

func (s *Stylesheet) normalize(doc any) error {
	var rules []any
	rulesPath := ""
	s.unmatched, s.declared = share, map[string]*mode{}
	var declaredOrder []string
	switch d := doc.(type) {
	case []any:
		rules = d
	case map[string]any:
		for _, k := range value.Keys(d) {
			switch k {
			case "$jslt", "rules", "unmatched", "modes":
			default:
				return fault.New(fault.JT0001, "unknown stylesheet member '"+k+"'", ptr("", k))
			}
		}
		v, has := d["$jslt"]
		if !has {
			return fault.New(fault.JT0001, "the stylesheet envelope requires '$jslt'", "/$jslt")
		}
		if v != "0.1" {
			return fault.New(fault.JT0004, "unknown JSLT format version "+value.Stringify(v), "/$jslt")
		}
		r, has := d["rules"]
		if !has {
			return fault.New(fault.JT0001, "the stylesheet envelope requires 'rules'", "/rules")
		}
		if rules, has = r.([]any); !has {
			return fault.New(fault.JT0001, "'rules' must be an array", "/rules")
		}
		if u, has := d["unmatched"]; has {
			if !isDisposition(u) {
				return fault.New(fault.JT0001, "invalid unmatched disposition "+value.Stringify(u), "/unmatched")
			}
			s.unmatched, s.unmatchedPath = u.(string), "/unmatched"
		}
		if m, has := d["modes"]; has {
			var err error
			if declaredOrder, err = normalizeModes(m, s.declared); err != nil {
				return err
			}
		}
		rulesPath = "/rules"
	default:
		return fault.New(fault.JT0001, "a stylesheet must be a rule array or a version envelope", "")
	}
	// the root mode, every mode a rule names, then every declared one; a
	// mode only an $apply names is added while the bodies compile
	s.mode("")
	s.rules = make([]*rule, len(rules))
	for i, raw := range rules {
		r, err := s.normalizeRule(raw, i, rulesPath)
		if err != nil {
			return err
		}
		s.rules[i] = r
		r.mode.rules = append(r.mode.rules, r)
	}
	for _, name := range declaredOrder {
		s.mode(name)
	}
	for _, m := range s.modeList {
		slices.SortStableFunc(m.rules, func(a, b *rule) int {
			switch {
			case a.priority > b.priority:
				return -1
			case a.priority < b.priority:
				return 1
			}
			return b.index - a.index
		})
	}
	s.root = s.modes[""]
	return nil
}

// mode returns the named mode, creating it with its declared disposition
// or the stylesheet's.
func (s *Stylesheet) mode(name string) *mode {
	if m, ok := s.modes[name]; ok {
		return m
	}
	m := &mode{ord: len(s.modeList), name: name, unmatched: s.unmatched, unmatchedPath: s.unmatchedPath}
	if d, ok := s.declared[name]; ok {
		m.unmatched, m.unmatchedPath = d.unmatched, d.unmatchedPath
	}
	s.modes[name] = m
	s.modeList = append(s.modeList, m)
	return m
}

func normalizeModes(v any, declared map[string]*mode) ([]string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fault.New(fault.JT0001, "'modes' must be an object", "/modes")
	}
	names := value.Keys(obj)
	for _, name := range names {
		modePath := ptr("/modes", name)
		config, ok := obj[name].(map[string]any)
		if !ok {
			return nil, fault.New(fault.JT0001, "mode '"+name+"' must be an object", modePath)
		}
		for _, k := range value.Keys(config) {
			if k != "unmatched" {
				return nil, fault.New(fault.JT0001, "unknown mode member '"+k+"'", ptr(modePath, k))
			}
		}
		u, has := config["unmatched"]
		if !has {
			return nil, fault.New(fault.JT0001, "mode '"+name+"' requires 'unmatched'", modePath+"/unmatched")
		}
		if !isDisposition(u) {
			return nil, fault.New(fault.JT0001, "invalid unmatched disposition "+value.Stringify(u), modePath+"/unmatched")
		}
		declared[name] = &mode{name: name, unmatched: u.(string), unmatchedPath: modePath + "/unmatched"}
	}
	return names, nil
}

func (s *Stylesheet) normalizeRule(raw any, index int, rulesPath string) (*rule, error) {
	rulePath := idx(rulesPath, index)
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fault.New(fault.JT0002, "a stylesheet rule must be an object", rulePath)
	}
	for _, k := range value.Keys(obj) {
		switch k {
		case "match", "mode", "priority", "body":
		default:
			return nil, fault.New(fault.JT0002, "unknown rule member '"+k+"'", ptr(rulePath, k))
		}
	}
	body, has := obj["body"]
	if !has {
		return nil, fault.New(fault.JT0002, "a stylesheet rule requires 'body'", rulePath+"/body")
	}
	r := &rule{index: index, docPath: rulePath, bodyDocPath: rulePath + "/body", rawBody: body}
	name := ""
	if m, has := obj["mode"]; has {
		if name, ok = m.(string); !ok {
			return nil, fault.New(fault.JT0002, "'mode' must be a string", rulePath+"/mode")
		}
	}
	r.mode = s.mode(name)
	// the priority is checked before the match, as the reference does
	p, hasPriority := obj["priority"]
	if hasPriority {
		f, ok := p.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fault.New(fault.JT0002, "'priority' must be a finite JSON number", rulePath+"/priority")
		}
	}
	conditions := 0
	if m, has := obj["match"]; has {
		n, err := r.normalizeMatch(m, rulePath+"/match")
		if err != nil {
			return nil, err
		}
		conditions = n
	}
	// the default priority (§4): both conditions 1, one 0, none -1
	r.priority = float64(conditions - 1)
	if hasPriority {
		r.priority = p.(float64)
	}
	return r, nil
}

// normalizeMatch reads a match member and returns how many conditions
// (path, schema) it states. A schema is kept only as a fact: with no
// type-test compiler it can only be refused (JT0006), after the shape of
// the whole stylesheet has been checked.
func (r *rule) normalizeMatch(v any, matchPath string) (int, error) {
	if src, ok := v.(string); ok {
		r.hasPath, r.pathSrc, r.pathDocPath = true, src, matchPath
		return 1, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return 0, fault.New(fault.JT0003, "'match' must be a JSONPath string or an object", matchPath)
	}
	if len(obj) == 0 {
		return 0, fault.New(fault.JT0003, "'match' cannot be an empty object", matchPath)
	}
	for _, k := range value.Keys(obj) {
		if k != "path" && k != "schema" {
			return 0, fault.New(fault.JT0003, "unknown match member '"+k+"'", ptr(matchPath, k))
		}
	}
	n := 0
	if p, has := obj["path"]; has {
		src, ok := p.(string)
		if !ok {
			return 0, fault.New(fault.JT0003, "'match.path' must be a JSONPath string", matchPath+"/path")
		}
		r.hasPath, r.pathSrc, r.pathDocPath = true, src, matchPath+"/path"
		n++
	}
	if _, has := obj["schema"]; has {
		r.hasSchema, r.schemaPath = true, matchPath+"/schema"
		n++
	}
	return n, nil
}
