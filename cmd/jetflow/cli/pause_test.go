package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// TestPlainViewOperator: start --wait says when an operator paused the
// run, and why a terminated run ended.
func TestPlainViewOperator(t *testing.T) {
	var buf bytes.Buffer
	v := &view{w: &buf, prefix: "  r1 ", running: map[string]bool{}}
	v.show([]client.Progress{
		{Kind: client.ProgressState, At: 1000, State: "/states/check"},
		{Kind: client.ProgressPaused, At: 1100, State: "/states/check", Detail: "provider down"},
		{Kind: client.ProgressPaused, At: 1200, State: "/states/check"},
		{Kind: client.ProgressEnd, At: 1300, Status: &wire.Status{Status: wire.StatusTerminated, Reason: "duplicate order"}},
	})
	want := []string{
		"  r1 +0.000s state check",
		"  r1 +0.100s paused by an operator: provider down (jetflow resume)",
		"  r1 +0.200s paused by an operator (jetflow resume)",
		"  r1 terminated in 0.300s",
		"  r1 reason duplicate order",
	}
	if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if code := exitCode(&wire.Status{Status: wire.StatusTerminated}); code != exitCancelled {
		t.Errorf("start --wait exits %d for a terminated run, want %d", code, exitCancelled)
	}
}
