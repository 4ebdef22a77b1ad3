package lifecycle

import (
	"context"
	"sync"
)

// Loop is one background goroutine between Start and Stop: the shape of
// the dispatcher's helpers that run for its whole life (the bulk job and
// schedule runners). The zero value is ready.
type Loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs body in a goroutine with a context that Stop cancels; it
// does nothing while an earlier body runs.
func (l *Loop) Start(body func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.cancel, l.done = cancel, done
	go func() {
		defer close(done)
		body(ctx)
	}()
}

// Stop cancels the body's context, calls interrupt (when not nil) to
// unblock what a context does not reach, and waits for the body to
// return. Without a body running it does nothing.
func (l *Loop) Stop(interrupt func()) {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	if interrupt != nil {
		interrupt()
	}
	<-done
}
