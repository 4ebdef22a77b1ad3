package replay

import (
	"maps"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
)

// TestFillFindsWhatAReplicaLacked: an input the record names that the
// read did not find (a replica answered its direct gets without it,
// finding 26) is read through the leader; one purged since is not, and
// costs no error.
func TestFillFindsWhatAReplicaLacked(t *testing.T) {
	t.Parallel()
	ctx, js, names, publish := provisioned(t)
	var seqs []uint64
	for _, subject := range []string{names.Start("r1"), names.Event("r2", "go"), names.Result("r1"), names.Result("r1"), names.Event("r1", "go")} {
		seqs = append(seqs, publish(subject))
	}
	mine := []uint64{seqs[0], seqs[2], seqs[3], seqs[4]}
	read := func() *runReading {
		t.Helper()
		counts, last, err := kvstore.SubjectCounts(ctx, js, names.InputStream(), names.RunInputs("r1"), 0)
		if err != nil {
			t.Fatal(err)
		}
		return &runReading{counts: counts, last: last, found: map[uint64]Message{}, per: map[string]uint64{}}
	}
	// A replica gave the last result and the event, not the start and
	// the first result.
	h := read()
	if err := h.bySeq(ctx, js, names.InputStream(), names.RunInputs("r1"), []uint64{seqs[3], seqs[4]}); err != nil {
		t.Fatal(err)
	}
	if err := h.fill(ctx, js, names.InputStream(), names.RunInputs("r1"), append(slices.Clone(mine), seqs[1])); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(h.found)); !slices.Equal(got, mine) {
		t.Errorf("after fill: seqs %v, want the run's %v", got, mine)
	}
	inputs, err := js.Stream(ctx, names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if err := inputs.Purge(ctx, jetstream.WithPurgeSubject(names.RunInputs("r1"))); err != nil {
		t.Fatal(err)
	}
	h = &runReading{counts: h.counts, last: h.last, found: map[uint64]Message{}, per: map[string]uint64{}}
	if err := h.fill(ctx, js, names.InputStream(), names.RunInputs("r1"), mine); err != nil || len(h.found) != 0 {
		t.Errorf("fill of purged inputs: %d found, %v; want none, no error", len(h.found), err)
	}
}
