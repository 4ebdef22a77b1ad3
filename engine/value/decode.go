package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	if err := checkLimits(data, lim); err != nil {
		return nil, err
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

// checkLimits refuses data past lim's size or depth.
func checkLimits(data []byte, lim Limits) error {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultLimits.MaxBytes
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultLimits.MaxDepth
	}
	if len(data) > lim.MaxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	if d := depth(data); d > lim.MaxDepth {
		return fmt.Errorf("%w: depth over %d", ErrTooDeep, lim.MaxDepth)
	}
	return nil
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

// Written is the member order of a document's objects as written, by the
// JSON Pointer of each object: JavaScript's own-key order of the object
// JSON.parse makes of the text (array-index keys ascending by number,
// then the others in the order they first appear). Only objects whose
// order differs from Keys order are listed.
type Written map[string][]string

// Under returns the entries of w inside the value at pointer p, with p
// taken off their pointers: the order of that value read as its own
// document. It returns nil when there are none.
func (w Written) Under(p string) Written {
	var out Written
	for k, keys := range w {
		if k == p || strings.HasPrefix(k, p+"/") {
			if out == nil {
				out = Written{}
			}
			out[k[len(p):]] = keys
		}
	}
	return out
}

// KeysOf returns obj's keys in the order w lists for the object at
// pointer path (asWritten true: an order other than Keys order), else in
// Keys order; a listing that does not name obj's keys exactly is ignored.
func (w Written) KeysOf(obj map[string]any, path string) (keys []string, asWritten bool) {
	if ks, ok := w[path]; ok && len(ks) == len(obj) {
		for _, k := range ks {
			if _, has := obj[k]; !has {
				return Keys(obj), false
			}
		}
		return ks, true
	}
	return Keys(obj), false
}

// DecodeWritten is Decode that also returns the member order the text
// writes its objects in, for documents the reference reads as written
// rather than canonicalized (a simulation's mock queries).
func DecodeWritten(data []byte, lim Limits) (any, Written, error) {
	v, err := Decode(data, lim)
	if err != nil {
		return nil, nil, err
	}
	w := Written{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := writtenOrder(dec, "", w); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return v, w, nil
}

// writtenOrder reads one value from dec, recording the order of every
// object in it whose written order is not Keys order.
func writtenOrder(dec *json.Decoder, path string, w Written) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := writtenOrder(dec, path+"/"+strconv.Itoa(i), w); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('{'):
		o := NewObject(0)
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			o.Set(k, nil)
			if err := writtenOrder(dec, path+"/"+EncodePointerSegment(k), w); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if keys := o.Names(); !InKeysOrder(keys) {
			w[path] = keys
		}
	}
	return nil
}
