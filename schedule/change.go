package schedule

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/jetflow/jetflow/wire"
)

// Change is an update of a schedule's definition: each field set
// replaces the definition's, each nil one leaves it (docs/SCHEDULES.md#update).
// The CLI's schedule update and the console's form both make one.
type Change struct {
	Workflow *string `json:"workflow,omitempty"`
	// Cron replaces an interval; Every replaces a cron expression and its
	// time zone.
	Cron     *string `json:"cron,omitempty"`
	Every    *string `json:"every,omitempty"`
	TimeZone *string `json:"timeZone,omitempty"`
	// Input is every run's input from then on (JSON null for none).
	Input json.RawMessage `json:"input,omitempty"`
	// Jitter "0" (or any zero duration) removes the jitter.
	Jitter  *string `json:"jitter,omitempty"`
	Overlap *string `json:"overlap,omitempty"`
	CatchUp *string `json:"catchUp,omitempty"`
}

// Empty reports whether c changes nothing.
func (c Change) Empty() bool {
	return c.Workflow == nil && c.Cron == nil && c.Every == nil && c.TimeZone == nil && c.Input == nil &&
		c.Jitter == nil && c.Overlap == nil && c.CatchUp == nil
}

// Apply makes the change to def; Store.Update validates the result.
func (c Change) Apply(def *wire.Schedule) {
	if c.Workflow != nil {
		def.Workflow = *c.Workflow
	}
	if c.Cron != nil {
		def.Cron, def.Every = *c.Cron, ""
	}
	if c.Every != nil {
		def.Every, def.Cron, def.TimeZone = *c.Every, "", ""
	}
	if c.TimeZone != nil {
		def.TimeZone = *c.TimeZone
	}
	if c.Input != nil {
		def.Input = slices.Clone(c.Input)
	}
	if c.Jitter != nil {
		def.Jitter = *c.Jitter
		if j, err := time.ParseDuration(*c.Jitter); err == nil && j == 0 {
			def.Jitter = ""
		}
	}
	if c.Overlap != nil {
		def.Overlap = *c.Overlap
	}
	if c.CatchUp != nil {
		def.CatchUp = *c.CatchUp
	}
}

// Flags is the change as the flags of jetflow schedule update, in the
// order the command lists them, unquoted: ["--cron", "0 2 * * *", ...].
func (c Change) Flags() []string {
	var out []string
	add := func(flag string, v *string) {
		if v != nil {
			out = append(out, flag, *v)
		}
	}
	add("--workflow", c.Workflow)
	add("--cron", c.Cron)
	add("--every", c.Every)
	add("--time-zone", c.TimeZone)
	if c.Input != nil {
		out = append(out, "--input", string(c.Input))
	}
	add("--jitter", c.Jitter)
	add("--overlap", c.Overlap)
	add("--catch-up", c.CatchUp)
	return out
}
