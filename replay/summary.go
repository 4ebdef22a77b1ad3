package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Line is one history message as a person reads it: time, sequence,
// kind and a summary of the body.
func Line(names subjects.Names, m Message) string {
	kind, summary := Summarize(names, m)
	return fmt.Sprintf("%s %8d  %-6s  %s", m.Time.UTC().Format("2006-01-02T15:04:05.000Z"), m.Seq, kind, summary)
}

// Summarize returns a message's kind and a one-line summary: the workflow
// and input size of a start, the type and payload of an event, the node,
// attempt and outcome of a result, the timer of a fire, the reason of a
// cancel. A message that does not parse says why: a run that exists
// records it as rejected, and the dispatchers terminate any other.
func Summarize(names subjects.Names, m Message) (kind, summary string) {
	_, kind, eventType, err := names.ParseInput(m.Subject)
	if err != nil {
		kind = "?"
	}
	if err := step.Check(names, m.Subject, m.Header, m.Data); err != nil {
		return kind, "MALFORMED (refused by the dispatchers): " + oneLine(err.Error(), 160)
	}
	switch kind {
	case subjects.KindStart:
		var b wire.Start
		_ = json.Unmarshal(m.Data, &b)
		rev := b.Revision
		if rev == "" {
			rev = "(latest)"
		}
		text := fmt.Sprintf("workflow=%s revision=%s input=%dB", b.Workflow, rev, len(b.Input))
		if e := b.Event; e != nil {
			text += " event=" + e.Type
			if len(e.Payload) > 0 {
				text += " payload=" + compact(e.Payload, 80)
			}
		}
		return kind, text
	case subjects.KindEvent:
		if len(bytes.TrimSpace(m.Data)) == 0 {
			return kind, "type=" + eventType + " (no payload)"
		}
		return kind, "type=" + eventType + " payload=" + compact(m.Data, 80)
	case subjects.KindResult:
		var b wire.Result
		_ = json.Unmarshal(m.Data, &b)
		s := fmt.Sprintf("node=%s attempt=%d ", b.Node, b.Attempt)
		if b.Error == nil {
			return kind, s + "ok output=" + compact(b.Output, 80)
		}
		s += "error " + strconv.Quote(oneLine(b.Error.Message, 80))
		if b.Error.Code != "" {
			s += " code=" + b.Error.Code
		}
		if b.Error.NonRetryable {
			s += " non-retryable"
		}
		return kind, s
	case subjects.KindTimer:
		var b wire.Timer
		_ = json.Unmarshal(m.Data, &b)
		if b.Timer == "" {
			b.Timer = m.Header.Get(wire.HeaderTimer)
		}
		s := "timer=" + b.Timer
		if b.Deadline > 0 {
			s += " deadline=" + time.UnixMilli(int64(b.Deadline)).UTC().Format("2006-01-02T15:04:05.000Z")
		}
		return kind, s
	case subjects.KindCancel:
		var b wire.Cancel
		_ = json.Unmarshal(m.Data, &b)
		if b.Reason == "" {
			return kind, "(no reason)"
		}
		return kind, "reason=" + strconv.Quote(oneLine(b.Reason, 120))
	case subjects.KindPause, subjects.KindResume, subjects.KindTerminate:
		var b wire.Operation
		_ = json.Unmarshal(m.Data, &b)
		s := "(no reason)"
		if b.Reason != "" {
			s = "reason=" + strconv.Quote(oneLine(b.Reason, 120))
		}
		if b.Operator != "" {
			s += " operator=" + strconv.Quote(oneLine(b.Operator, 60))
		}
		return kind, s
	case subjects.KindPostpone:
		var b wire.Postpone
		_ = json.Unmarshal(m.Data, &b)
		return kind, "task=" + b.Task + "@" + b.Version + " (paused; its due attempts start over)"
	case subjects.KindRedrive:
		var b wire.Redrive
		_ = json.Unmarshal(m.Data, &b)
		if b.Reason == "" {
			return kind, "(no reason)"
		}
		return kind, "reason=" + strconv.Quote(oneLine(b.Reason, 120))
	case subjects.KindMigrate:
		var b wire.Migrate
		_ = json.Unmarshal(m.Data, &b)
		s := "from=" + b.From + " to=" + b.To
		if b.Divergence != "" {
			s += " (its check found a divergence)"
		}
		if b.Reason != "" {
			s += " reason=" + strconv.Quote(oneLine(b.Reason, 120))
		}
		return kind, s
	case subjects.KindReset:
		var b wire.Reset
		_ = json.Unmarshal(m.Data, &b)
		s := "to=" + strconv.FormatUint(b.To, 10)
		if b.Reason != "" {
			s += " reason=" + strconv.Quote(oneLine(b.Reason, 120))
		}
		if b.Operator != "" {
			s += " operator=" + strconv.Quote(oneLine(b.Operator, 60))
		}
		return kind, s
	}
	return kind, compact(m.Data, 80)
}

// compact is JSON on one line, cut to about n bytes.
func compact(data []byte, n int) string {
	if len(bytes.TrimSpace(data)) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if json.Compact(&b, data) != nil {
		return oneLine(string(data), n)
	}
	return oneLine(b.String(), n)
}

// oneLine replaces line breaks and cuts s to n bytes (at a rune boundary).
func oneLine(s string, n int) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
