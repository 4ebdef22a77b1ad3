package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Limits of a policy file (docs/POLICY.md lists them).
const (
	maxBytes        = 1 << 20
	maxEntries      = 10000
	maxAttempts     = 1000
	maxMultiplier   = 100
	maxCodes        = 100
	maxCodeBytes    = 256
	minInterval     = time.Millisecond
	maxInterval     = 7 * 24 * time.Hour
	minStartToClose = time.Second
	maxStartToClose = 24 * time.Hour
	minTimeout      = time.Second
	maxTimeout      = 366 * 24 * time.Hour
	maxConcurrency  = 100000
	minRate         = 0.001
	maxRate         = 100000
	maxBurst        = 100000
	maxPerKey       = 100000
)

// Field names of a rule.
const (
	fieldMaxAttempts       = "maxAttempts"
	fieldInitialInterval   = "initialInterval"
	fieldMaxInterval       = "maxInterval"
	fieldMultiplier        = "multiplier"
	fieldNonRetryableCodes = "nonRetryableCodes"
	fieldStartToClose      = "startToClose"
	fieldAttemptTimeout    = "attemptTimeout"
	fieldScheduleToClose   = "scheduleToClose"
	fieldMaxConcurrency    = "maxConcurrency"
	fieldRatePerSecond     = "ratePerSecond"
	fieldRateBurst         = "rateBurst"
	fieldPriority          = "priority"
	fieldPriorityFrom      = "priorityFrom"
	fieldKey               = "key"
	fieldMaxPerKey         = "maxPerKey"
)

var fieldList = strings.Join([]string{
	fieldMaxAttempts, fieldInitialInterval, fieldMaxInterval,
	fieldMultiplier, fieldNonRetryableCodes, fieldStartToClose, fieldAttemptTimeout, fieldScheduleToClose,
	fieldMaxConcurrency, fieldRatePerSecond, fieldRateBurst,
	fieldPriority, fieldPriorityFrom, fieldKey, fieldMaxPerKey,
}, ", ")

// ErrInvalid is wrapped by every refusal of a policy file.
var ErrInvalid = errors.New("invalid policy")

// Error is a refused policy file: what is wrong, and where as a JSON
// Pointer into the file ("" is the whole file).
type Error struct {
	Pointer string
	Reason  string
}

func (e *Error) Error() string {
	where := e.Pointer
	if where == "" {
		where = "''"
	}
	return "policy " + where + ": " + e.Reason
}

// Is makes every *Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

func errAt(ptr, format string, args ...any) error {
	return &Error{Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
}

// Parse reads and validates a policy file. Every refusal is an *Error
// naming the JSON Pointer of what is wrong. An empty object is a valid,
// empty policy.
func Parse(data []byte) (*Policy, error) {
	if len(data) > maxBytes {
		return nil, errAt("", "the file is %d bytes, more than the limit of %d", len(data), maxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := openObject(dec, "", `must be a JSON object mapping "task@version", "task" or "*" to a rule`); err != nil {
		return nil, err
	}
	p := &Policy{rules: map[string]Rule{}}
	for dec.More() {
		key, err := nextKey(dec, "")
		if err != nil {
			return nil, err
		}
		ptr := "/" + value.EncodePointerSegment(key)
		if key == RunKey {
			if p.retention != nil {
				return nil, errAt(ptr, "the key %q appears twice", key)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, syntaxError(ptr, err)
			}
			if err := p.parseRun(raw, ptr); err != nil {
				return nil, err
			}
			if p.retention == nil {
				off := time.Duration(-1) // an empty "$run": nothing set
				p.retention = &off
			}
			continue
		}
		if key == ChildrenKey {
			if p.children != nil {
				return nil, errAt(ptr, "the key %q appears twice", key)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, syntaxError(ptr, err)
			}
			if err := p.parseChildren(raw, ptr); err != nil {
				return nil, err
			}
			continue
		}
		if _, dup := p.rules[key]; dup {
			return nil, errAt(ptr, "the key %q appears twice", key)
		}
		if len(p.rules) == maxEntries {
			return nil, errAt(ptr, "more than %d entries", maxEntries)
		}
		if err := checkKey(key); err != nil {
			return nil, errAt(ptr, "%v", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(ptr, err)
		}
		r, err := parseRule(raw, ptr)
		if err != nil {
			return nil, err
		}
		p.rules[key] = r
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, syntaxError("", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errAt("", "data after the policy object")
	}
	if p.retention != nil && *p.retention < 0 {
		p.retention = nil
	}
	if err := p.checkResolved(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkKey accepts "*", "task" and "task@version" ("$run" is read apart).
func checkKey(key string) error {
	if key == Wildcard {
		return nil
	}
	task, version, hasVersion := strings.Cut(key, "@")
	if err := subjects.CheckTask(task); err != nil {
		return fmt.Errorf(`key %q is not "*", "task" or "task@version": %w`, key, err)
	}
	if hasVersion {
		if err := subjects.CheckVersion(version); err != nil {
			return fmt.Errorf(`key %q is not "*", "task" or "task@version": %w`, key, err)
		}
	}
	return nil
}

func openObject(dec *json.Decoder, ptr, want string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(ptr, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errAt(ptr, "%s, not %s", want, describeToken(tok))
	}
	return nil
}

func nextKey(dec *json.Decoder, ptr string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", syntaxError(ptr, err)
	}
	key, ok := tok.(string)
	if !ok {
		return "", errAt(ptr, "invalid JSON: expected a member name")
	}
	return key, nil
}

func syntaxError(ptr string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return errAt(ptr, "invalid JSON at byte %d: %v", se.Offset, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errAt(ptr, "invalid JSON: unexpected end of the file")
	}
	return errAt(ptr, "invalid JSON: %v", err)
}

func describeToken(tok any) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return string(t)
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

func parseRule(raw json.RawMessage, ptr string) (Rule, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := openObject(dec, ptr, "must be an object with any of "+fieldList); err != nil {
		return Rule{}, err
	}
	var r Rule
	seen := map[string]bool{}
	for dec.More() {
		field, err := nextKey(dec, ptr)
		if err != nil {
			return Rule{}, err
		}
		fptr := ptr + "/" + value.EncodePointerSegment(field)
		if seen[field] {
			return Rule{}, errAt(fptr, "the field %q appears twice", field)
		}
		seen[field] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return Rule{}, syntaxError(fptr, err)
		}
		if err := r.set(field, v, fptr); err != nil {
			return Rule{}, err
		}
	}
	if r.InitialInterval != 0 && r.MaxInterval != 0 && r.InitialInterval > r.MaxInterval {
		return Rule{}, errAt(ptr+"/"+fieldInitialInterval, "%s is longer than maxInterval %s", r.InitialInterval, r.MaxInterval)
	}
	return r, nil
}

func (r *Rule) set(field string, v any, ptr string) error {
	var err error
	switch field {
	case fieldMaxAttempts:
		r.MaxAttempts, err = integer(v, ptr, 1, maxAttempts)
	case fieldInitialInterval:
		r.InitialInterval, err = duration(v, ptr, minInterval, maxInterval)
	case fieldMaxInterval:
		r.MaxInterval, err = duration(v, ptr, minInterval, maxInterval)
	case fieldMultiplier:
		r.Multiplier, err = number(v, ptr, 1, maxMultiplier)
	case fieldNonRetryableCodes:
		r.NonRetryableCodes, err = codes(v, ptr)
	case fieldStartToClose:
		r.StartToClose, err = duration(v, ptr, minStartToClose, maxStartToClose)
	case fieldAttemptTimeout:
		r.AttemptTimeout, err = duration(v, ptr, minTimeout, maxTimeout)
	case fieldScheduleToClose:
		r.ScheduleToClose, err = duration(v, ptr, minTimeout, maxTimeout)
	case fieldMaxConcurrency:
		r.MaxConcurrency, err = integer(v, ptr, 1, maxConcurrency)
	case fieldRatePerSecond:
		r.RatePerSecond, err = number(v, ptr, minRate, maxRate)
	case fieldRateBurst:
		r.RateBurst, err = integer(v, ptr, 1, maxBurst)
	case fieldPriority:
		var n int
		n, err = integer(v, ptr, wire.MinPriority, wire.MaxPriority)
		r.Priority = &n
	case fieldPriorityFrom:
		r.PriorityFrom, err = queryDoc(v, ptr)
	case fieldKey:
		r.Key, err = queryDoc(v, ptr)
	case fieldMaxPerKey:
		r.MaxPerKey, err = integer(v, ptr, 1, maxPerKey)
	default:
		err = errAt(ptr, "%q is not a policy field (fields: %s)", field, fieldList)
	}
	return err
}

func number(v any, ptr string, lo, hi float64) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errAt(ptr, "must be a number from %v to %v, not %s", lo, hi, describe(v))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || f < lo || f > hi {
		return 0, errAt(ptr, "must be a number from %v to %v, not %s", lo, hi, n)
	}
	return f, nil
}

func integer(v any, ptr string, lo, hi int) (int, error) {
	f, err := number(v, ptr, float64(lo), float64(hi))
	if err != nil || f != math.Trunc(f) {
		return 0, errAt(ptr, "must be an integer from %d to %d, not %s", lo, hi, describe(v))
	}
	return int(f), nil
}

func duration(v any, ptr string, lo, hi time.Duration) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, errAt(ptr, `must be a Go duration string such as "1s" or "250ms", not %s`, describe(v))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errAt(ptr, `%q is not a Go duration (write e.g. "1s", "250ms", "1m30s")`, s)
	}
	if d < lo || d > hi {
		return 0, errAt(ptr, "%s is outside %s to %s", s, lo, hi)
	}
	return d, nil
}

func codes(v any, ptr string) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errAt(ptr, "must be an array of error code strings, not %s", describe(v))
	}
	if len(list) > maxCodes {
		return nil, errAt(ptr, "has %d codes, more than %d", len(list), maxCodes)
	}
	out := make([]string, 0, len(list))
	for i, c := range list {
		cptr := fmt.Sprintf("%s/%d", ptr, i)
		s, ok := c.(string)
		if !ok {
			return nil, errAt(cptr, "must be an error code string, not %s", describe(c))
		}
		if s == "" || len(s) > maxCodeBytes {
			return nil, errAt(cptr, "an error code must be 1 to %d bytes, not %d", maxCodeBytes, len(s))
		}
		for _, prev := range out {
			if prev == s {
				return nil, errAt(cptr, "the code %q appears twice", s)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return t.String()
	case string:
		return fmt.Sprintf("the string %q", t)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// checkResolved refuses an entry whose resolved rule, with the less
// specific entries and the defaults, backs off longer at first than its
// cap: every task resolves through one such chain.
func (p *Policy) checkResolved() error {
	for _, key := range p.Keys() {
		chain := p.rules[key]
		task, version, hasVersion := strings.Cut(key, "@")
		switch {
		case key == Wildcard:
		case hasVersion:
			chain = p.Rule(task, version)
		default:
			chain = chain.inherit(p.rules[Wildcard])
		}
		r := chain.withDefaults()
		ptr := "/" + value.EncodePointerSegment(key)
		if r.InitialInterval > r.MaxInterval {
			return errAt(ptr, "the resolved initialInterval %s is longer than the resolved maxInterval %s (set both, here or in the entries this one inherits from)", r.InitialInterval, r.MaxInterval)
		}
		if p.rules[key].MaxPerKey != 0 && r.Key == "" {
			return errAt(ptr+"/"+fieldMaxPerKey, "a per-key limit needs a key: set key (a query over the run input, such as \"$.input.customer\") here or in the entries this one inherits from")
		}
		if p.rules[key].RateBurst != 0 && r.RatePerSecond == 0 {
			return errAt(ptr+"/"+fieldRateBurst, "a burst needs a rate: set ratePerSecond here or in the entries this one inherits from")
		}
	}
	return nil
}
