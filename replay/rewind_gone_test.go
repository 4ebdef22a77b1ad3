package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// TestConfirmGone: an input a history read missed is gone only when the
// stream's leader holds no input of the run at its sequence, and holds
// a later one (the reset being applied, the witness). One it holds must
// not refuse a reset for good (the read was answered by a server behind
// the leader), nor may an answer that lacks the witness too (a leader
// that has not applied what was stored); another run's message there,
// or a purged input, confirms the trim.
func TestConfirmGone(t *testing.T) {
	t.Parallel()
	ctx, js, names, publish := provisioned(t)
	mine := publish(names.Event("r1", "go"))
	other := publish(names.Event("r2", "go"))
	if err := confirmGone(ctx, js, names, "r1", mine, 0); err == nil || !strings.Contains(err.Error(), "leader holds") {
		t.Errorf("input %d the stream holds: %v, want an error to read again", mine, err)
	}
	inputs, err := js.Stream(ctx, names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if err := inputs.Purge(ctx, jetstream.WithPurgeSubject(names.RunInputs("r1"))); err != nil {
		t.Fatal(err)
	}
	if err := confirmGone(ctx, js, names, "r1", mine, 0); err != nil {
		t.Errorf("input %d purged: %v, want the trim confirmed", mine, err)
	}
	// What a server that has not applied the reset answers: nothing of
	// the run from mine on, though the reset is stored past it.
	unapplied := other + 1
	if err := confirmGone(ctx, js, names, "r1", mine, unapplied); err == nil || !strings.Contains(err.Error(), "not even the reset") {
		t.Errorf("input %d purged, reset at %d not held: %v, want an error to read again", mine, unapplied, err)
	}
	reset := publish(names.Reset("r1"))
	if err := confirmGone(ctx, js, names, "r1", mine, reset); err != nil {
		t.Errorf("input %d purged, reset at %d held: %v, want the trim confirmed", mine, reset, err)
	}
	if err := confirmGone(ctx, js, names, "r1", other, reset); err != nil {
		t.Errorf("another run's message at %d: %v, want the trim confirmed", other, err)
	}
}

// provisioned starts a server with a deployment provisioned on it, and
// returns a publish of an empty input that gives its stream sequence.
func provisioned(t *testing.T) (context.Context, jetstream.JetStream, subjects.Names, func(subject string) uint64) {
	t.Helper()
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	return ctx, js, names, func(subject string) uint64 {
		t.Helper()
		ack, err := js.Publish(ctx, subject, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
}
