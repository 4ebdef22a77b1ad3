package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// TaskWorkers is what a task version's durable consumer tells of the
// workers that serve it: whether any is pulling, and how many invocations
// wait for one. It is read from the consumer's info; nothing of it is
// kept in a run's record.
type TaskWorkers struct {
	Task    string `json:"task"`
	Version string `json:"version"`
	// Consumer is false when the task version has no consumer: no
	// deployment has created it, so no worker can serve it.
	Consumer bool `json:"consumer"`
	// Pulling counts pull requests waiting at the server: workers ready
	// for an invocation.
	Pulling int `json:"pulling"`
	// Pending counts invocations no worker has taken yet; InHand those
	// delivered and not yet acknowledged.
	Pending uint64 `json:"pending"`
	InHand  int    `json:"inHand"`
	// LastPull is when a worker last took an invocation; zero if never.
	LastPull time.Time `json:"lastPull,omitzero"`
	// Paused: an operator paused the task version (jetflow task pause).
	Paused bool `json:"paused,omitempty"`
}

// TaskWorkers reads task version task@version's consumer. A missing
// consumer is no error (Consumer is false).
func (c *Client) TaskWorkers(ctx context.Context, task, version string) (TaskWorkers, error) {
	w := TaskWorkers{Task: task, Version: version}
	if err := subjects.CheckTask(task); err != nil {
		return w, fmt.Errorf("client: task workers: %w", err)
	}
	if err := subjects.CheckVersion(version); err != nil {
		return w, fmt.Errorf("client: task workers: %w", err)
	}
	cons, err := c.js.Consumer(ctx, c.names.TaskStream(), c.names.TaskConsumer(task, version))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("client: task workers of %s@%s: %w", task, version, err)
	}
	info := cons.CachedInfo() // just fetched by Consumer
	w.Consumer = true
	w.Pulling, w.Pending, w.InHand, w.Paused = info.NumWaiting, info.NumPending, info.NumAckPending, info.Paused
	if info.Delivered.Last != nil {
		w.LastPull = *info.Delivered.Last
	}
	return w, nil
}

// Starved reports invocations that wait because no worker is there to
// take them: no consumer, or invocations pending and no pull request
// waiting (a paused task version waits for its operator, not a worker).
func (w TaskWorkers) Starved() bool {
	return !w.Consumer || (w.Pending > 0 && w.Pulling == 0 && !w.Paused)
}

// Text says, as of now, why the task version's invocations wait for a
// worker: "no worker is pulling check-stock@1: 1 invocation waiting,
// nothing pulled for 12s" (or "never pulled"). It is empty when w is not
// Starved.
func (w TaskWorkers) Text(now time.Time) string {
	tv := w.Task + "@" + w.Version
	switch {
	case !w.Consumer:
		return fmt.Sprintf("%s has no consumer: no deployment created it, so no worker can take its invocations", tv)
	case !w.Starved():
		return ""
	}
	waiting := fmt.Sprintf("%d invocations waiting", w.Pending)
	if w.Pending == 1 {
		waiting = "1 invocation waiting"
	}
	pulled := "never pulled"
	if !w.LastPull.IsZero() {
		pulled = fmt.Sprintf("nothing pulled for %s", now.Sub(w.LastPull).Round(time.Second))
	}
	return fmt.Sprintf("no worker is pulling %s: %s, %s", tv, waiting, pulled)
}
