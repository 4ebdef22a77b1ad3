package worker

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/payload"
)

// payloadBucket binds the payload bucket the first time an invocation or
// a result needs it: a worker may start before anything is provisioned,
// and most never need it.
type payloadBucket struct {
	mu    sync.Mutex
	store *payload.Store
}

// get returns the payload bucket, or an error wrapping payload.ErrNoBucket.
func (w *Worker) payloadStore(ctx context.Context) (*payload.Store, error) {
	w.payloads.mu.Lock()
	defer w.payloads.mu.Unlock()
	if w.payloads.store != nil {
		return w.payloads.store, nil
	}
	s, err := payload.Open(ctx, w.js, payload.Config{Names: w.cfg.Names, Threshold: w.cfg.PayloadThreshold})
	if err != nil {
		return nil, err
	}
	w.payloads.store = s
	return s, nil
}

// invocationBody returns an invocation's body, read from the payload
// bucket when it came by reference. permanent says no redelivery can cure
// the error (a bad reference).
func (w *Worker) invocationBody(ctx context.Context, h nats.Header, data []byte) (body []byte, permanent bool, err error) {
	if h.Get(payload.HeaderName) == "" {
		return data, false, nil
	}
	s, err := w.payloadStore(ctx)
	if err != nil {
		return nil, errors.Is(err, payload.ErrNoBucket), err
	}
	body, _, err = s.Body(ctx, h, data)
	return body, errors.Is(err, payload.ErrBadRef), err
}

// threshold is the largest result published inline.
func (w *Worker) threshold() int {
	if w.cfg.PayloadThreshold > 0 {
		return w.cfg.PayloadThreshold
	}
	return payload.DefaultThreshold
}
