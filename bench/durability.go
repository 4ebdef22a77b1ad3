package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/jetflow/jetflow/embedded"
)

// Durability is how a setup's servers sync their file stores: the
// deployment setting `jetflow serve --fsync` or `--sync-interval` makes.
// The zero value is the server's default, an fsync every two minutes.
type Durability struct {
	// Always fsyncs every write before it is acknowledged (--fsync).
	Always bool
	// Interval, when positive, fsyncs every interval (--sync-interval).
	Interval time.Duration
}

// String is the durability as flags and reports name it: "default",
// "fsync" or "sync-interval=100ms".
func (d Durability) String() string {
	switch {
	case d.Always:
		return "fsync"
	case d.Interval > 0:
		return "sync-interval=" + d.Interval.String()
	}
	return "default"
}

// ParseDurability reads "default", "fsync" (or "always") or a duration
// (an fsync interval, such as 100ms).
func ParseDurability(s string) (Durability, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "default":
		return Durability{}, nil
	case "fsync", "always":
		return Durability{Always: true}, nil
	}
	d, err := time.ParseDuration(strings.TrimPrefix(s, "sync-interval="))
	if err != nil || d <= 0 {
		return Durability{}, fmt.Errorf("durability %q: use default, fsync or a positive fsync interval such as 100ms", s)
	}
	return Durability{Interval: d}, nil
}

// apply sets the embedded server's sync settings.
func (d Durability) apply(c *embedded.Config) {
	c.SyncAlways, c.SyncInterval = d.Always, d.Interval
}

// agentArgs are the server agent's flags for d.
func (d Durability) agentArgs() []string {
	switch {
	case d.Always:
		return []string{"-sync-always"}
	case d.Interval > 0:
		return []string{"-sync-interval", d.Interval.String()}
	}
	return nil
}
