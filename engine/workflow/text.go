package workflow

import (
	"errors"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// LowerJSON decodes a document within value.DefaultLimits and lowers it.
// Text that is not JSON is JF0021 "workflow must be JSON".
func LowerJSON(data []byte) (*Lowered, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	return Lower(doc)
}

// decode parses document text. encoding/json turns an escaped lone
// surrogate into U+FFFD and refuses a number beyond the double range; the
// reference refuses both (the number parses as Infinity) with the
// location of the first in its canonical walk, so decode refuses them
// with the same cause.
func decode(data []byte) (any, error) {
	doc, err := value.Decode(data, value.Limits{})
	if err == nil && loneSurrogate(data) {
		err = errors.New(unpaired)
	}
	if err != nil && !errors.Is(err, value.ErrTooDeep) && !errors.Is(err, value.ErrTooLarge) {
		// name the value as the reference does: a lone surrogate, or a
		// number JSON.parse reads as Infinity
		if located := textFault(data); located != nil {
			err = located
		}
	}
	if err != nil {
		return nil, fault.Wrap(fault.JF0021, "workflow must be JSON", "", err)
	}
	return doc, nil
}

// loneSurrogate reports whether valid JSON text escapes a UTF-16
// surrogate that is not half of a pair. In valid JSON every backslash
// starts an escape inside a string.
func loneSurrogate(data []byte) bool {
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		u, ok := escapedUnit(data, i)
		i++ // skip the escaped character
		if !ok {
			continue
		}
		i += 4
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return true
		case u >= 0xD800 && u <= 0xDBFF:
			lo, ok := escapedUnit(data, i+1)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// escapedUnit decodes the \uXXXX escape at data[i], if that is one.
func escapedUnit(data []byte, i int) (uint16, bool) {
	if i+5 >= len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
	return uint16(n), err == nil
}
