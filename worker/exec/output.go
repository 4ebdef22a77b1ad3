package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// capped keeps up to max bytes and counts the rest; it never fails a
// write, so the program is never blocked on a full pipe.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// value returns stdout as exactly one JSON value.
func (c *capped) value() (json.RawMessage, error) {
	if c.over {
		return nil, fmt.Errorf("stdout exceeds %d bytes", c.max)
	}
	data := c.buf.Bytes()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("wrote nothing on stdout (write null for a task without output)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("stdout is not JSON (%w); it starts with %s", err, quoteStart(data))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("stdout holds more than one JSON value (write logs to stderr); it starts with %s", quoteStart(data))
	}
	return v, nil
}

func quoteStart(b []byte) string {
	const n = 120
	if len(b) > n {
		return fmt.Sprintf("%q...", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// tail keeps the last max bytes written.
type tail struct {
	buf  []byte
	max  int
	cut  bool // bytes were dropped from the start
	last byte // the last byte dropped
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.cut, t.last = true, p[len(p)-t.max-1]
		return n, nil
	}
	if drop := len(t.buf) + len(p) - t.max; drop > 0 {
		if drop > len(t.buf) {
			drop = len(t.buf)
		}
		t.last = t.buf[drop-1]
		t.buf = append(t.buf[:0], t.buf[drop:]...)
		t.cut = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// text is the kept tail as readable text: from the first whole line when
// the start was cut off, valid UTF-8, trimmed.
func (t *tail) text() string {
	b := t.buf
	if t.cut && t.last != '\n' {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		} else {
			// One long line: drop a split rune at the start.
			for len(b) > 0 && !utf8.RuneStart(b[0]) {
				b = b[1:]
			}
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	switch {
	case s == "":
		return "(nothing on stderr)"
	case t.cut:
		return "..." + s
	}
	return s
}
