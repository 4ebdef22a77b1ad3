package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jetflow/jetflow/worker"
	"github.com/jetflow/jetflow/worker/exec"
)

// taskLog records every invocation the workers run, so that a test can
// check that each task attempt ran exactly once, and holds the "hold"
// task until the test releases it.
type taskLog struct {
	mu    sync.Mutex
	byRun map[string][]execution
	// held receives the run id of every hold invocation that started.
	held    chan string
	release map[string]chan struct{}
}

// execution is one invocation a worker ran, and when its handler began.
type execution struct {
	inv worker.Invocation
	at  time.Time
}

// attemptKey names one attempt of one task execution.
type attemptKey struct {
	run, activation, node string
	attempt               int
}

func newTaskLog() *taskLog {
	return &taskLog{
		byRun: map[string][]execution{},
		held:  make(chan string, 64), release: map[string]chan struct{}{},
	}
}

func (l *taskLog) record(inv worker.Invocation) {
	// The checks read who ran what and when, never the input or with: a
	// long test (the retention soak's 600 KiB inputs) would otherwise
	// hold every payload it ever ran and measure this log's growth.
	inv.Input, inv.With = nil, nil
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byRun[inv.Run] = append(l.byRun[inv.Run], execution{inv, time.Now()})
}

// invocations returns the invocations of one run in the order they ran.
func (l *taskLog) invocations(runID string) []worker.Invocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []worker.Invocation
	for _, x := range l.byRun[runID] {
		out = append(out, x.inv)
	}
	return out
}

// repeated returns every attempt of runID (all runs when empty) that ran
// more than once. With redelivered, an attempt may run again on a NATS
// redelivery (its acknowledgement was lost), but never twice on a first
// delivery: that would be an invocation published twice. After a server
// restart (restarted, when not zero) one more first delivery is allowed,
// after the restart, of an attempt that ran before it: a dispatcher that
// publishes a run's outbox again (docs/RELIABILITY.md) stores a second
// copy of an invocation the worker had acknowledged, since the restarted
// server remembers only the message ids of what it still stores.
func (l *taskLog) repeated(runID string, redelivered bool, restarted time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	type runs struct{ before, after int }
	first := map[attemptKey]runs{}
	for run, xs := range l.byRun {
		for _, x := range xs {
			if runID == "" || run == runID {
				if x.inv.Delivery <= 1 || !redelivered {
					k := attemptKey{x.inv.Run, x.inv.Activation, x.inv.Node, x.inv.Attempt}
					n := first[k]
					if !restarted.IsZero() && x.at.After(restarted) {
						n.after++
					} else {
						n.before++
					}
					first[k] = n
				}
			}
		}
	}
	var out []string
	for k, n := range first {
		switch {
		case restarted.IsZero() && n.before != 1:
			out = append(out, fmt.Sprintf("%+v ran %d times", k, n.before))
		case !restarted.IsZero() && (n.before > 1 || n.after > 1):
			out = append(out, fmt.Sprintf("%+v ran %d times before the restart and %d times after it", k, n.before, n.after))
		}
	}
	return out
}

// copiesAfter counts the first deliveries after restarted of attempts
// that had run before it: invocations published again (repeated allows
// them).
func (l *taskLog) copiesAfter(restarted time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	before := map[attemptKey]bool{}
	var after []attemptKey
	for _, xs := range l.byRun {
		for _, x := range xs {
			k := attemptKey{x.inv.Run, x.inv.Activation, x.inv.Node, x.inv.Attempt}
			switch {
			case !x.at.After(restarted):
				before[k] = true
			case x.inv.Delivery <= 1:
				after = append(after, k)
			}
		}
	}
	n := 0
	for _, k := range after {
		if before[k] {
			n++
		}
	}
	return n
}

// total is how many invocations ran, with repeats.
func (l *taskLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, xs := range l.byRun {
		n += len(xs)
	}
	return n
}

func (l *taskLog) releaseChan(runID string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.release[runID]
	if !ok {
		ch = make(chan struct{})
		l.release[runID] = ch
	}
	return ch
}

// unhold lets the hold task of runID return.
func (l *taskLog) unhold(runID string) { close(l.releaseChan(runID)) }

// hugeOutput exceeds the embedded server's 1 MiB max payload: it travels
// by reference.
var hugeOutput = strings.Repeat("x", 2<<20)

// catHandler is "cat" served by worker exec: the program writes back the
// request it read on stdin.
var catHandler = func() worker.Handler {
	h, err := exec.Handler([]string{"cat"}, exec.Options{})
	if err != nil {
		panic(err)
	}
	return h
}()

// handlers are the tasks every test's workers serve, all at version "1".
func (l *taskLog) handlers() map[string]worker.Handler {
	number := func(f func(float64) float64) worker.Handler {
		return func(_ context.Context, inv worker.Invocation) (any, error) {
			var n float64
			if err := inv.DecodeInput(&n); err != nil {
				return nil, err
			}
			return f(n), nil
		}
	}
	return map[string]worker.Handler{
		"double": number(func(n float64) float64 { return 2 * n }),
		"square": number(func(n float64) float64 { return n * n }),
		"neg":    number(func(n float64) float64 { return -n }),
		"inc": func(_ context.Context, inv worker.Invocation) (any, error) {
			var in struct{ N float64 }
			if err := inv.DecodeInput(&in); err != nil {
				return nil, err
			}
			return map[string]any{"n": in.N + 1}, nil
		},
		"fail": func(context.Context, worker.Invocation) (any, error) {
			return nil, errors.New("boom: payment gateway down")
		},
		"fatal": func(context.Context, worker.Invocation) (any, error) {
			return nil, worker.NonRetryable(errors.New("card declined"))
		},
		"flaky": func(_ context.Context, inv worker.Invocation) (any, error) {
			if inv.Attempt < 3 {
				return nil, fmt.Errorf("flaky: attempt %d fails", inv.Attempt)
			}
			return map[string]any{"attempt": inv.Attempt, "input": inv.Input}, nil
		},
		"hold": func(ctx context.Context, inv worker.Invocation) (any, error) {
			select {
			case l.held <- inv.Run:
			default:
			}
			select {
			case <-l.releaseChan(inv.Run):
				return "released", nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		},
		"huge": func(context.Context, worker.Invocation) (any, error) { return hugeOutput, nil },
		// The program of worker exec that answers with the request it
		// read (payloads by reference through exec).
		"cat": catHandler,
		"grow": func(_ context.Context, inv worker.Invocation) (any, error) {
			var in struct{ Blob string }
			if err := inv.DecodeInput(&in); err != nil {
				return nil, err
			}
			return map[string]any{"blob": in.Blob + "!", "got": len(in.Blob)}, nil
		},
	}
}

// counted wraps h so that every invocation is recorded first.
func (l *taskLog) counted(h worker.Handler) worker.Handler {
	return func(ctx context.Context, inv worker.Invocation) (any, error) {
		l.record(inv)
		return h(ctx, inv)
	}
}
