package kvstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultRetryFor bounds how long transient JetStream errors (a cluster
// electing its leader, a concurrent create) are retried.
const DefaultRetryFor = 30 * time.Second

// Server error codes that mean "try again shortly".
const (
	codeNoPeers         = 10005 // cluster still forming: no suitable peers
	codeNotActive       = 10006
	codeNotAssigned     = 10007
	codeNotAvailable    = 10008 // cluster not available (no meta leader yet)
	codeNotLeader       = 10009
	codeStreamNameExist = 10058 // a concurrent create won; the update path will succeed
	codeMsgNotFound     = 10037
)

// transient reports whether err is worth retrying.
func transient(err error) bool {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) || errors.Is(err, nats.ErrConnectionReconnecting) {
		return true
	}
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode {
		case codeNoPeers, codeNotActive, codeNotAssigned, codeNotAvailable, codeNotLeader, codeStreamNameExist:
			return true
		}
	}
	return false
}

// Retry runs op until it succeeds, returns a Permanent error, or
// ctx ends or maxElapsed passes. When ctx ends the last error of op is
// kept in the returned error, so that a timeout still says what failed.
func Retry[T any](ctx context.Context, maxElapsed time.Duration, op func() (T, error)) (T, error) {
	if maxElapsed <= 0 {
		maxElapsed = DefaultRetryFor
	}
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMaxInterval(time.Second),
		backoff.WithMaxElapsedTime(maxElapsed),
	)
	var last error
	v, err := backoff.RetryWithData(func() (T, error) {
		v, err := op()
		if err != nil {
			last = err
		}
		return v, err
	}, backoff.WithContext(b, ctx))
	if err != nil && ctx.Err() != nil && last != nil && !errors.Is(err, last) {
		err = fmt.Errorf("%w (last attempt: %w)", err, last)
	}
	return v, err
}

// Classify marks err Permanent unless it is transient: worth retrying (a
// cluster electing its leader, no responders, a timeout, a concurrent
// create).
func Classify(err error) error {
	if err == nil || transient(err) {
		return err
	}
	return backoff.Permanent(err)
}

// Permanent stops Retry at err.
func Permanent(err error) error { return backoff.Permanent(err) }
