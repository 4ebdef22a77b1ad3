package subjects

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every refusal of a name.
var ErrInvalid = errors.New("invalid name")

// CheckRunID refuses a run id that cannot be one subject token.
func CheckRunID(id string) error { return checkToken("run id", id) }

// CheckTask refuses a task name that cannot be one subject token.
func CheckTask(name string) error { return checkToken("task name", name) }

// CheckEventType refuses an event type that cannot be one subject token.
func CheckEventType(t string) error { return checkToken("event type", t) }

// CheckWorkflowName refuses a workflow name that cannot be a KV key token.
func CheckWorkflowName(name string) error { return checkToken("workflow name", name) }

// CheckVersion refuses a task version that cannot be encoded into a token:
// letters, digits and "_-+." only, so that "1.2.0" works.
func CheckVersion(v string) error {
	if v == "" {
		return fmt.Errorf("%w: task version is empty", ErrInvalid)
	}
	if len(v) > MaxVersion {
		return fmt.Errorf("%w: task version %q is longer than %d bytes", ErrInvalid, v, MaxVersion)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !tokenByte(c) && c != '.' && c != '+' {
			return fmt.Errorf("%w: task version %q has %s at byte %d (allowed: letters, digits, '_', '-', '+', '.')", ErrInvalid, v, describe(c), i)
		}
	}
	return nil
}

// VersionToken encodes a checked version as one subject token. '.' becomes
// '~', which versions may not contain, so the encoding is reversible.
func VersionToken(v string) string { return strings.ReplaceAll(v, ".", "~") }

// checkToken admits 1..MaxToken bytes of letters, digits, '_' and '-'.
// Everything else is refused rather than escaped: these names are typed by
// people and a refusal is clearer than a silently rewritten subject.
func checkToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(s) > MaxToken {
		return fmt.Errorf("%w: %s %q is longer than %d bytes", ErrInvalid, what, s, MaxToken)
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return fmt.Errorf("%w: %s %q has %s at byte %d (allowed: letters, digits, '_', '-')", ErrInvalid, what, s, describe(s[i]), i)
		}
	}
	return nil
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func describe(c byte) string {
	switch c {
	case '.':
		return "'.' (a subject token separator)"
	case '*', '>':
		return fmt.Sprintf("'%c' (a subject wildcard)", c)
	case ' ', '\t', '\r', '\n':
		return "white space"
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("'%c'", c)
}
