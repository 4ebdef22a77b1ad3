package kvstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func apiErr(code jetstream.ErrorCode) error {
	return fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 400, ErrorCode: code, Description: "x"})
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                         string
		err                          error
		transient, read, uncheckedOK bool
	}{
		{"no responders", fmt.Errorf("x: %w", nats.ErrNoResponders), true, true, false},
		{"timeout", context.DeadlineExceeded, true, false, false},
		{"cluster not available", apiErr(codeNotAvailable), true, true, false},
		{"no peers yet", apiErr(codeNoPeers), true, false, false},
		{"name in use", apiErr(codeStreamNameExist), true, false, false},
		{"wrong last sequence", apiErr(jetstream.JSErrCodeStreamWrongLastSequence), false, false, false},
		{"unchecked last sequence", apiErr(jetstream.JSErrCodeStreamWrongLastSequenceConstant), false, false, true},
		{"bad config", apiErr(10052), false, false, false},
		{"plain", errors.New("boom"), false, false, false},
	}
	for _, c := range cases {
		if transient(c.err) != c.transient || readTransient(c.err) != c.read || unchecked(c.err) != c.uncheckedOK {
			t.Errorf("%s: transient=%v read=%v unchecked=%v", c.name, transient(c.err), readTransient(c.err), unchecked(c.err))
		}
	}
}

func TestRetryKeepsLastError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	calls := 0
	_, err := Retry(ctx, time.Minute, func() (int, error) { calls++; return 0, nats.ErrNoResponders })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, nats.ErrNoResponders) || calls < 2 {
		t.Fatalf("retry = %v after %d calls", err, calls)
	}
	calls = 0
	_, err = Retry(context.Background(), time.Minute, func() (int, error) { calls++; return 0, Permanent(errors.New("bad")) })
	if err == nil || err.Error() != "bad" || calls != 1 {
		t.Fatalf("permanent error: %v after %d calls", err, calls)
	}
}
