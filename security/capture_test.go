package security

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// capture is a slog handler that keeps every record it is given at or
// above its level, rendered as one line of text.
type capture struct {
	level slog.Level
	attrs []slog.Attr
	store *lines
}

type lines struct {
	mu  sync.Mutex
	all []string
}

func newCapture(level slog.Level) *capture { return &capture{level: level, store: &lines{}} }

func (c *capture) logger() *slog.Logger { return slog.New(c) }

func (c *capture) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level }

func (c *capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve())
		return true
	}
	for _, a := range c.attrs {
		write(a)
	}
	r.Attrs(write)
	c.store.mu.Lock()
	c.store.all = append(c.store.all, b.String())
	c.store.mu.Unlock()
	return nil
}

func (c *capture) WithAttrs(as []slog.Attr) slog.Handler {
	return &capture{level: c.level, attrs: append(append([]slog.Attr(nil), c.attrs...), as...), store: c.store}
}

// WithGroup flattens groups: the tests only search the text.
func (c *capture) WithGroup(string) slog.Handler { return c }

func (c *capture) lines() []string {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	return append([]string(nil), c.store.all...)
}

// containing returns the captured lines that contain s.
func (c *capture) containing(s string) []string {
	var out []string
	for _, l := range c.lines() {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
