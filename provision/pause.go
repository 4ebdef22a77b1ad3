package provision

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// A task version is paused for the whole deployment by pausing its
// durable consumer natively: the server delivers none of its invocations
// until the pause ends (at the time given, or at ResumeTask). Dispatchers
// read the pause (TaskPaused) when an attempt's deadline comes, and
// postpone the attempt instead of failing it.

// ForeverPause is how far ahead a pause with no end is set: the server
// needs a time.
const ForeverPause = 100 * 365 * 24 * time.Hour

// PauseTask pauses the consumer of a task version until until (a zero
// until: until ResumeTask). It returns when the pause ends.
func PauseTask(ctx context.Context, js jetstream.JetStream, names subjects.Names, task, version string, until time.Time) (time.Time, error) {
	if err := checkTaskVersion(task, version); err != nil {
		return time.Time{}, err
	}
	if until.IsZero() {
		until = time.Now().Add(ForeverPause)
	}
	res, err := js.PauseConsumer(ctx, names.TaskStream(), names.TaskConsumer(task, version), until)
	if err != nil {
		return time.Time{}, taskConsumerError("pausing", names, task, version, err)
	}
	return res.PauseUntil, nil
}

// ResumeTask ends the pause of a task version's consumer.
func ResumeTask(ctx context.Context, js jetstream.JetStream, names subjects.Names, task, version string) error {
	if err := checkTaskVersion(task, version); err != nil {
		return err
	}
	if _, err := js.ResumeConsumer(ctx, names.TaskStream(), names.TaskConsumer(task, version)); err != nil {
		return taskConsumerError("resuming", names, task, version, err)
	}
	return nil
}

// TaskPaused reports whether a task version's consumer is paused now, and
// until when.
func TaskPaused(ctx context.Context, js jetstream.JetStream, names subjects.Names, task, version string) (bool, time.Time, error) {
	c, err := js.Consumer(ctx, names.TaskStream(), names.TaskConsumer(task, version))
	if err != nil {
		return false, time.Time{}, taskConsumerError("reading", names, task, version, err)
	}
	info := c.CachedInfo()
	if !info.Paused {
		return false, time.Time{}, nil
	}
	var until time.Time
	if info.Config.PauseUntil != nil {
		until = *info.Config.PauseUntil
	}
	return true, until, nil
}

func taskConsumerError(doing string, names subjects.Names, task, version string, err error) error {
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("provision: task %s version %s has no consumer %q on stream %q (deploy a workflow that uses it first): %w",
			task, version, names.TaskConsumer(task, version), names.TaskStream(), err)
	}
	return fmt.Errorf("provision: %s consumer %q of task %s version %s: %w", doing, names.TaskConsumer(task, version), task, version, err)
}
