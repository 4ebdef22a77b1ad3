package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Limits bound what Decode accepts, so that a hostile document is refused
// with a clear error instead of exhausting the stack or memory.
type Limits struct {
	// MaxBytes is the largest input accepted. Default 16 MiB.
	MaxBytes int
	// MaxDepth is the deepest nesting of arrays and objects. Default 256.
	MaxDepth int
}

// DefaultLimits are the limits Decode applies when given none.
var DefaultLimits = Limits{MaxBytes: 16 << 20, MaxDepth: 256}

// ErrTooDeep and ErrTooLarge are returned (wrapped) by Decode.
var (
	ErrTooDeep  = errors.New("JSON nesting too deep")
	ErrTooLarge = errors.New("JSON document too large")
)

// Decode parses exactly one JSON value from data within the limits.
func Decode(data []byte, lim Limits) (any, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultLimits.MaxBytes
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultLimits.MaxDepth
	}
	if len(data) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	if d := depth(data); d > lim.MaxDepth {
		return nil, fmt.Errorf("%w: depth over %d", ErrTooDeep, lim.MaxDepth)
	}
	var v any
	if json.Unmarshal(data, &v) == nil {
		// The same values as the decoder's below, in one pass without its
		// reader and buffer; a document it refuses gets the decoder's error.
		return v, nil
	}
	v = nil
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: data after the first value")
	}
	return v, nil
}

// depth returns the deepest bracket nesting outside strings, stopping
// early once it passes a limit the caller will refuse anyway.
func depth(data []byte) int {
	d, maxD := 0, 0
	inStr, esc := false, false
	for _, c := range data {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			d++
			if d > maxD {
				maxD = d
			}
		case ']', '}':
			d--
		}
	}
	return maxD
}
