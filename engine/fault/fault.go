// Package fault holds the engine's typed error: a stable code, a bare
// reason and the JSON Pointer of the offending member. Every JF and JQ code
// is declared once, in codes.go, next to its meaning.
package fault

import (
	"errors"
	"strings"
)

// Error is a coded engine failure. Its message is composed exactly as the
// reference composes it ("CODE: reason at path"), because workflow data
// (what a catch stores) carries that text.
type Error struct {
	Code   Code
	Reason string
	// Path is a JSON Pointer into the document; HasPath false means no
	// location, which differs from the root ("").
	Path    string
	HasPath bool
	// DataPath locates the fault in data rather than in the document.
	DataPath    string
	HasDataPath bool
	// NodeID names the failing DAG node for JF2006.
	NodeID string
	// Source is the author's document path when Path points into a
	// document the lowering derived (the statechart, a work state's DAG)
	// or at a scope rather than the member at fault. It never shows in
	// Error(): the reference's text does not carry it.
	Source    string
	HasSource bool
	Cause     error
}

// New returns an error with a document path.
func New(code Code, reason, path string) *Error {
	return &Error{Code: code, Reason: reason, Path: path, HasPath: true}
}

// NoPath returns an error without a document location.
func NoPath(code Code, reason string) *Error {
	return &Error{Code: code, Reason: reason}
}

// Wrap returns an error with a path and a cause.
func Wrap(code Code, reason, path string, cause error) *Error {
	return &Error{Code: code, Reason: reason, Path: path, HasPath: true, Cause: cause}
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.HasPath {
		b.WriteString(" at ")
		if e.Path == "" {
			b.WriteString("''")
		} else {
			b.WriteString(e.Path)
		}
	}
	if e.HasDataPath {
		b.WriteString(" in data ")
		if e.DataPath == "" {
			b.WriteString("''")
		} else {
			b.WriteString(e.DataPath)
		}
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Cause }

// WithSource sets Source and returns e.
func (e *Error) WithSource(path string) *Error {
	e.Source, e.HasSource = path, true
	return e
}

// Is matches another *Error by code, so errors.Is(err, fault.NoPath(c, ""))
// and errors.Is(err, c) both work.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *Error:
		return t.Code == e.Code
	case Code:
		return t == e.Code
	}
	return false
}

// CodeOf returns the code of the first coded error in err's chain, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// PathOf returns the document path of the first coded error in err's chain.
func PathOf(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Path, e.HasPath
	}
	return "", false
}
