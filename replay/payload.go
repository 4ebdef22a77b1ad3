package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// resolvePayloads replaces the empty body of each message that travelled
// by reference (docs/PROTOCOL.md 2.4) with the object it names, as the
// dispatcher read it. A reference that cannot be resolved leaves the body
// empty and sets PayloadErr, which the stepper refuses as the dispatcher
// did; any other failure (the server) is returned.
func resolvePayloads(ctx context.Context, js jetstream.JetStream, names subjects.Names, msgs []Message) error {
	var store *payload.Store
	opened := false
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Get(wire.HeaderPayload) == "" {
			continue
		}
		if !opened {
			opened = true
			s, err := payload.Open(ctx, js, payload.Config{Names: names})
			if err != nil && !errors.Is(err, payload.ErrNoBucket) {
				return fmt.Errorf("replay: %w", err)
			}
			store = s
		}
		body, _, err := store.Body(ctx, m.Header, m.Data)
		switch {
		case err == nil:
			m.Data = body
		case errors.Is(err, payload.ErrBadRef), errors.Is(err, payload.ErrNoBucket):
			m.PayloadErr = err
		default:
			return fmt.Errorf("replay: input %d: %w", m.Seq, err)
		}
	}
	return nil
}
