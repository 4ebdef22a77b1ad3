package kvstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
)

// TestSubjectCounts: the literal subjects a filter matches with their
// counts and the stream's last sequence; too many is ErrTooManyResults,
// a missing stream ErrStreamNotFound.
func TestSubjectCounts(t *testing.T) {
	t.Parallel()
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"s.a.1", "s.a.1", "s.a.2", "s.b.1"} {
		if _, err := js.Publish(ctx, subj, nil); err != nil {
			t.Fatal(err)
		}
	}
	counts, last, err := SubjectCounts(ctx, js, "S", "s.a.>", 0)
	if err != nil || last != 4 || len(counts) != 2 || counts["s.a.1"] != 2 || counts["s.a.2"] != 1 {
		t.Fatalf("SubjectCounts(s.a.>) = %v, %d, %v; want s.a.1:2 s.a.2:1, last 4", counts, last, err)
	}
	if _, _, err := SubjectCounts(ctx, js, "S", "s.>", 2); !errors.Is(err, ErrTooManyResults) {
		t.Errorf("three subjects with at most 2: %v, want ErrTooManyResults", err)
	}
	if _, _, err := SubjectCounts(ctx, js, "NONE", "s.>", 0); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("a missing stream: %v, want ErrStreamNotFound", err)
	}
}
