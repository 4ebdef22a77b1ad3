package client

import (
	"strings"
	"testing"
)

// TestOrderEnteredWithoutWorkflow falls back to declaration-free order:
// states are still all reported.
func TestOrderEnteredWithoutWorkflow(t *testing.T) {
	t.Parallel()
	got := orderEntered(nil, []string{"/states/a"}, map[string]int{"/states/c": 1, "/states/b": 1})
	if strings.Join(got, " ") != "/states/b /states/c" {
		t.Errorf("got %v", got)
	}
}
