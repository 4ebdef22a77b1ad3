package runrecord

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

func TestDecodeTombstone(t *testing.T) {
	t.Parallel()
	r := wire.Removed{Run: "r1", At: 1e12 + 5000, Workflow: "w", Revision: "w/1", Status: "done", Settled: 1e12, Until: 1e12 + 65000}
	data, err := EncodeRemoved(r)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Decode(data)
	var re *RemovedError
	if rec != nil || !errors.Is(err, ErrRemoved) || !errors.As(err, &re) || re.Removed != r {
		t.Fatalf("Decode(tombstone) = %v, %v", rec, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "run r1 removed by retention at 2001-09-09T01:46:45Z (it settled done at 2001-09-09T01:46:40Z)") {
		t.Errorf("message %q", msg)
	}
	// A record is never taken for a tombstone.
	if _, err := Decode([]byte(`{"state":{"removed":1}}`)); errors.Is(err, ErrRemoved) {
		t.Errorf("a record decoded as a tombstone: %v", err)
	}
}
