package client

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/wire"
)

// filterRun is a waiting run of order@r1 in state "wait" (inside flow
// "pay"), started at stream sequence 10.
func filterRun(t testing.TB) *Run {
	t.Helper()
	in, err := value.Decode([]byte(`{"sku":"tea","qty":3}`), value.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := value.Decode([]byte(`{"paid":false}`), value.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return &Run{
		ID:       "o-1",
		Status:   &wire.Status{Run: "o-1", Workflow: "order", Revision: "r1", Status: wire.StatusWaiting},
		State:    &run.State{Control: statechart.State{Active: []string{"/states/pay/flow/states/wait"}}, Context: run.Context{Input: in, Data: data}},
		StartSeq: 10,
	}
}

func TestFilterMatches(t *testing.T) {
	t.Parallel()
	r := filterRun(t)
	for _, c := range []struct {
		name string
		f    wire.RunFilter
		// seqs binds the start-time bounds: before, after.
		before, after uint64
		want          bool
	}{
		{"empty", wire.RunFilter{}, 0, 0, true},
		{"workflow", wire.RunFilter{Workflow: "order"}, 0, 0, true},
		{"other workflow", wire.RunFilter{Workflow: "refund"}, 0, 0, false},
		{"revision", wire.RunFilter{Revision: "r1"}, 0, 0, true},
		{"other revision", wire.RunFilter{Revision: "r2"}, 0, 0, false},
		{"status", wire.RunFilter{Status: wire.StatusWaiting}, 0, 0, true},
		{"other status", wire.RunFilter{Status: wire.StatusDone}, 0, 0, false},
		{"state by name", wire.RunFilter{State: "pay/wait"}, 0, 0, true},
		{"state by id", wire.RunFilter{State: "/states/pay/flow/states/wait"}, 0, 0, true},
		{"other state", wire.RunFilter{State: "wait"}, 0, 0, false},
		{"query over input", wire.RunFilter{Match: json.RawMessage(`{"$eq":["$.input.sku","tea"]}`)}, 0, 0, true},
		{"query over data", wire.RunFilter{Match: json.RawMessage(`"$.data.paid"`)}, 0, 0, false},
		{"query and workflow", wire.RunFilter{Workflow: "order", Match: json.RawMessage(`{"$gt":["$.input.qty",2]}`)}, 0, 0, true},
		{"started before a later start", wire.RunFilter{StartedBefore: "2026-12-01T10:00:00Z"}, 11, 0, true},
		{"started before its own start", wire.RunFilter{StartedBefore: "2026-12-01T10:00:00Z"}, 10, 0, false},
		{"started at or after", wire.RunFilter{StartedAfter: "2026-12-01T10:00:00Z"}, 0, 10, true},
		{"started after a later time", wire.RunFilter{StartedAfter: "2026-12-01T10:00:00Z"}, 0, 11, false},
		{"named", wire.RunFilter{Runs: []string{"o-0", "o-1"}}, 0, 0, true},
		{"not named", wire.RunFilter{Runs: []string{"o-0", "o-10"}}, 0, 0, false},
		{"named, other workflow", wire.RunFilter{Workflow: "refund", Runs: []string{"o-1"}}, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, err := CompileFilter(c.f)
			if err != nil {
				t.Fatal(err)
			}
			m.beforeSeq, m.afterSeq, m.bound = c.before, c.after, true
			got, err := m.Match(r)
			if err != nil || got != c.want {
				t.Errorf("Match = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestFilterRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f    wire.RunFilter
		want string
	}{
		{wire.RunFilter{Workflow: "a.b"}, "workflow: invalid name"},
		{wire.RunFilter{Status: "sleeping"}, `status "sleeping" is not a run status`},
		{wire.RunFilter{StartedBefore: "yesterday"}, `started-before: "yesterday" is not an RFC 3339 time`},
		{wire.RunFilter{StartedAfter: "2026-13-01T00:00:00Z"}, "started-after: "},
		{wire.RunFilter{Match: json.RawMessage(`{"$eq":[1]}`)}, "match: JQ"},
		{wire.RunFilter{Match: json.RawMessage(`{`)}, "match: not JSON"},
		{wire.RunFilter{Runs: []string{"o-1", "o.2"}}, "run: invalid name: run id \"o.2\""},
		{wire.RunFilter{Runs: make([]string, wire.MaxFilterRuns+1)}, "run: 5001 run ids, more than the 5000 a filter may name"},
	} {
		_, err := CompileFilter(c.f)
		if !errors.Is(err, ErrBadFilter) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CompileFilter(%+v) = %v; want ErrBadFilter with %q", c.f, err, c.want)
		}
	}
	// A query that compiles but fails on a run names the run and keeps
	// its code and pointer.
	m, err := CompileFilter(wire.RunFilter{Match: json.RawMessage(`{"$add":["$.input.sku",1]}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Match(filterRun(t))
	var fe *fault.Error
	if !errors.Is(err, ErrMatch) || !errors.As(err, &fe) || !strings.Contains(err.Error(), "run o-1") {
		t.Errorf("a failing query: %v", err)
	}
	// Start-time bounds need Bind.
	m, err = CompileFilter(wire.RunFilter{StartedAfter: "2026-12-01T10:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Match(filterRun(t)); err == nil {
		t.Error("an unbound start-time filter matched")
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	c := cursor{Sort: SortStart, Key: 42, Run: "o-1"}
	got, err := decodeCursor(encodeCursor(c), SortStart)
	if err != nil || *got != c {
		t.Fatalf("decodeCursor = %+v, %v", got, err)
	}
	if _, err := decodeCursor(encodeCursor(c), SortUpdate); err == nil {
		t.Error("a start cursor was accepted for an update sort")
	}
	for _, bad := range []string{"", "zzz", "e30", "!!"} {
		if _, err := decodeCursor(bad, SortStart); !errors.Is(err, ErrBadFilter) {
			t.Errorf("decodeCursor(%q) = %v", bad, err)
		}
	}
}

// FuzzCompileFilter: no filter text panics the compiler or the matcher.
func FuzzCompileFilter(f *testing.F) {
	f.Add("order", "waiting", "pay/wait", "2026-12-01T10:00:00Z", `{"$eq":["$.input.sku","tea"]}`)
	f.Add("a.b", "sleeping", "", "yesterday", `{"$eq":[1]}`)
	f.Add("", "", "/states/x", "", `"$.data.paid"`)
	f.Add("", "", "", "", `{`)
	f.Fuzz(func(t *testing.T, workflow, status, state, after, match string) {
		fl := wire.RunFilter{Workflow: workflow, Status: status, State: state, StartedAfter: after}
		if match != "" {
			fl.Match = json.RawMessage(match)
		}
		m, err := CompileFilter(fl)
		if err != nil {
			if !errors.Is(err, ErrBadFilter) {
				t.Fatalf("refusal without ErrBadFilter: %v", err)
			}
			return
		}
		m.bound = true
		_, _ = m.Match(filterRun(t))
	})
}

// FuzzDecodeCursor: any cursor text is decoded or refused, never panics.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursor{Sort: SortStart, Key: 42, Run: "o-1"}))
	f.Add("zzz")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if c, err := decodeCursor(s, SortStart); err == nil && (c.Run == "" || c.Sort != SortStart) {
			t.Fatalf("accepted %q as %+v", s, c)
		}
	})
}
