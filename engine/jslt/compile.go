package jslt

import (
	"errors"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
)

// compileRules compiles each rule in document order: its match path
// (JT0003), its schema (JT0006: no type-test compiler), its body (JT0007).
func (s *Stylesheet) compileRules() error {
	seen := map[string]bool{}
	readsPath := false
	anyPath := false
	for _, r := range s.rules {
		if r.hasPath {
			p, err := query.ParsePath(r.pathSrc)
			if err != nil {
				return fault.Wrap(fault.JT0003, "invalid match path: "+err.Error(), r.pathDocPath, err)
			}
			r.path, anyPath = p, true
		}
		if r.hasSchema {
			return fault.New(fault.JT0006,
				"schema matches require a type-test compiler (options.compileTypeTest)", r.schemaPath)
		}
		q, err := query.Compile(r.rawBody, query.Options{Apply: &query.ApplyOperator{
			Mode:   r.mode.name,
			Target: func(name string) { s.mode(name) },
		}})
		if err != nil {
			path := r.bodyDocPath
			if inner, ok := errors.AsType[*fault.Error](err); ok {
				path += inner.Path
			}
			return fault.Wrap(fault.JT0007, "rule body failed to compile: "+err.Error(), path, err)
		}
		r.body = q
		for _, name := range q.Externals() {
			switch name {
			case "path":
				readsPath = true
			case "root":
			default:
				if !seen[name] {
					seen[name] = true
					s.externals = append(s.externals, name)
				}
			}
		}
	}
	s.needsLoc = anyPath || readsPath
	for _, m := range s.modeList {
		m.pruned = m.unmatched == share
		for _, r := range m.rules {
			if r.hasPath {
				r.ordinal = len(m.paths)
				m.paths = append(m.paths, r)
			} else {
				m.pruned = false
			}
		}
	}
	return nil
}
