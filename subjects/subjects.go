// Package subjects is the one place that names every NATS subject, stream,
// consumer and bucket jetflow uses, under a configurable prefix so that
// several deployments can share one account. It also checks every run id,
// task name, version and event type before it reaches a subject, so that
// nothing a user supplies can break or inject into one.
package subjects

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultPrefix is the prefix of a deployment that names none.
const DefaultPrefix = "jetflow"

// MaxToken is the longest run id, task name, event type or prefix accepted.
const MaxToken = 128

// MaxVersion is the longest task version accepted.
const MaxVersion = 64

// Names builds every name of one deployment. The zero value is not valid;
// use New.
type Names struct {
	prefix string
}

// New returns the names under prefix ("" means DefaultPrefix).
func New(prefix string) (Names, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := checkToken("prefix", prefix); err != nil {
		return Names{}, err
	}
	return Names{prefix: prefix}, nil
}

// Must is New for prefixes known to be valid.
func Must(prefix string) Names {
	n, err := New(prefix)
	if err != nil {
		panic(err)
	}
	return n
}

// Prefix returns the deployment prefix.
func (n Names) Prefix() string { return n.prefix }

// Input kinds: the last token(s) of a run-input subject.
const (
	KindStart  = "start"
	KindEvent  = "event"
	KindResult = "result"
	KindTimer  = "timer"
	KindCancel = "cancel"
	// An operator's requests (pause.go).
	KindPause     = "pause"
	KindResume    = "resume"
	KindTerminate = "terminate"
	// A dispatcher's, for a paused task version (pause.go).
	KindPostpone = "postpone"
	// KindRedrive asks a failed run to continue from its failed work
	// activation (docs/OPERATIONS.md).
	KindRedrive = "redrive"
	// KindReset takes a run back to the state it had after one of its
	// earlier inputs, rebuilt from its history (docs/OPERATIONS.md).
	KindReset = "reset"
	// KindMigrate moves a waiting or running run onto another revision
	// of its workflow that its own history proves the same
	// (docs/REVISIONS.md).
	KindMigrate = "migrate"
	// KindExpire is a settled run's removal by retention. It has no
	// subject of its own: its removal schedule (Expiry) fires on the run's
	// timer subject, marked by wire.HeaderExpire, so that it comes in
	// through the timers' own source.
	KindExpire = "expire"
)

// InputStream holds every message a run consumes: its history.
func (n Names) InputStream() string { return n.prefix + "_inputs" }

// InputAll matches every run input.
func (n Names) InputAll() string { return n.prefix + ".in.>" }

// RunInputs matches every input of one run (its history).
func (n Names) RunInputs(runID string) string { return n.prefix + ".in." + runID + ".>" }

// Start is where a run's start message goes.
func (n Names) Start(runID string) string { return n.prefix + ".in." + runID + "." + KindStart }

// Event is where an external event of the given type for a run goes.
func (n Names) Event(runID, eventType string) string {
	return n.prefix + ".in." + runID + "." + KindEvent + "." + eventType
}

// Result is where workers publish the result of a run's task invocation.
func (n Names) Result(runID string) string { return n.prefix + ".in." + runID + "." + KindResult }

// Timer is where a run's due timers arrive in the input stream, copied
// from Fired(run) in the timer stream (nobody publishes here).
func (n Names) Timer(runID string) string { return n.prefix + ".in." + runID + "." + KindTimer }

// Cancel is where a run's cancel request goes.
func (n Names) Cancel(runID string) string { return n.prefix + ".in." + runID + "." + KindCancel }

// Redrive is where a failed run's redrive request goes.
func (n Names) Redrive(runID string) string { return n.prefix + ".in." + runID + "." + KindRedrive }

// Reset is where a run's reset request goes.
func (n Names) Reset(runID string) string { return n.prefix + ".in." + runID + "." + KindReset }

// Migrate is where a run's migration to another revision goes.
func (n Names) Migrate(runID string) string { return n.prefix + ".in." + runID + "." + KindMigrate }

// TimerStream holds pending timer schedules and the timers they fire,
// apart from the input stream: schedules need a stream that obeys
// scheduling and roll-up headers, which the input stream must refuse,
// since anyone allowed one input could send them. Only dispatchers publish
// here; the input stream sources the fired timers (FiredAll) as Timer.
func (n Names) TimerStream() string { return n.prefix + "_timers" }

// ScheduleAll matches every pending timer schedule (in the timer stream).
func (n Names) ScheduleAll() string { return n.prefix + ".sched.>" }

// Schedule is the subject of one timer's schedule message in the layout
// before armed instances (ScheduleInstance), which schedules still
// pending from then use; Schedule(run, ">") matches every timer schedule
// of a run, in either layout.
func (n Names) Schedule(runID, timerID string) string {
	return n.prefix + ".sched." + runID + "." + timerID
}

// ScheduleInstance is the subject of one armed instance of a timer: the
// arming of timerID by the run's step number instance. One schedule lives
// per subject, so an arm or disarm published late (a stale outbox) only
// ever replaces the instance it was made for, never a later one.
func (n Names) ScheduleInstance(runID, timerID, instance string) string {
	return n.prefix + ".sched." + runID + "." + timerID + "." + instance
}

// FiredAll matches every fired timer in the timer stream.
func (n Names) FiredAll() string { return n.prefix + ".fired.*" }

// Fired is where the server produces a run's due timers in the timer
// stream: a schedule's target, which must be in the schedule's stream.
func (n Names) Fired(runID string) string { return n.prefix + ".fired." + runID }

// FiredToTimer is the subject transform destination that the input
// stream's source applies to FiredAll, so that Fired(run) lands on
// Timer(run) there.
func (n Names) FiredToTimer() string { return n.prefix + ".in.{{wildcard(1)}}." + KindTimer }

// Expiry is the subject of a settled run's removal schedule in the timer
// stream. It is inside ScheduleAll but outside Schedule(run, ">"), so
// the purge of a settled run's timers leaves it.
func (n Names) Expiry(runID string) string { return n.prefix + ".sched." + runID }

// RunTimerMessages matches, in the timer stream, a run's fired timers
// (its fired removal among them) and its removal schedule (not its
// timers' schedules, Schedule(run, ">")).
func (n Names) RunTimerMessages(runID string) string { return n.prefix + ".*." + runID }

// ReapAll matches, in the timer stream, what batched removal by
// retention keeps there: due entries, bucket schedules and their fires.
func (n Names) ReapAll() string { return n.prefix + ".reap.>" }

// ReapDue is a settled run's due entry: the run is removed when its
// bucket (Unix seconds of the bucket's end) is reaped.
func (n Names) ReapDue(bucket int64, runID string) string {
	return n.prefix + ".reap.due." + strconv.FormatInt(bucket, 10) + "." + runID
}

// ReapDueIn matches every due entry of one bucket.
func (n Names) ReapDueIn(bucket int64) string {
	return n.prefix + ".reap.due." + strconv.FormatInt(bucket, 10) + ".>"
}

// ReapDueAll matches every due entry.
func (n Names) ReapDueAll() string { return n.prefix + ".reap.due.>" }

// ReapSchedule is the schedule that fires a bucket's reaping, one per
// bucket (a republish replaces it).
func (n Names) ReapSchedule(bucket int64) string {
	return n.prefix + ".reap.at." + strconv.FormatInt(bucket, 10)
}

// ReapSchedules matches every bucket schedule.
func (n Names) ReapSchedules() string { return n.prefix + ".reap.at.*" }

// ReapFire is where a bucket's schedule fires: the reaper consumer's
// subjects (ReapFires), never the input stream's.
func (n Names) ReapFire(bucket int64) string {
	return n.prefix + ".reap.go." + strconv.FormatInt(bucket, 10)
}

// ReapFires matches every bucket fire.
func (n Names) ReapFires() string { return n.prefix + ".reap.go.*" }

// ParseReapFire returns the bucket of a fire subject.
func (n Names) ParseReapFire(subject string) (int64, error) {
	rest, ok := strings.CutPrefix(subject, n.prefix+".reap.go.")
	if !ok {
		return 0, fmt.Errorf("%w: %q is not a reap fire subject (%s)", ErrInvalid, subject, n.ReapFires())
	}
	b, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || b <= 0 {
		return 0, fmt.Errorf("%w: reap fire subject %q names no bucket", ErrInvalid, subject)
	}
	return b, nil
}

// ReaperConsumer is the durable consumer on the timer stream that hands
// each bucket fire to one dispatcher.
func (n Names) ReaperConsumer() string { return "reaper" }

// DispatcherConsumer is the durable consumer all dispatchers share in an
// unpartitioned deployment; in a partitioned one, it finishes the inputs
// stored before the stream was partitioned (PartitionConsumer).
func (n Names) DispatcherConsumer() string { return "dispatcher" }

// TaskStream holds task invocations until a worker acknowledges them.
func (n Names) TaskStream() string { return n.prefix + "_tasks" }

// TaskAll matches every task invocation.
func (n Names) TaskAll() string { return n.prefix + ".task.>" }

// Task is where invocations of one task version are published.
func (n Names) Task(task, version string) string {
	return n.prefix + ".task." + task + "." + VersionToken(version)
}

// TaskConsumer is the durable consumer the workers of one task version bind.
func (n Names) TaskConsumer(task, version string) string {
	return "task_" + task + "_" + VersionToken(version)
}

// StatusAll matches every run status announcement.
func (n Names) StatusAll() string { return n.prefix + ".status.>" }

// Status is where a run's status changes are announced.
func (n Names) Status(runID string) string { return n.prefix + ".status." + runID }

// RunBucket is the KV bucket of run state, keyed by run id.
func (n Names) RunBucket() string { return n.prefix + "_runs" }

// WorkflowBucket is the KV bucket of deployed workflow definitions.
func (n Names) WorkflowBucket() string { return n.prefix + "_workflows" }

// ParseInput splits a run-input subject into run id, kind and (for events)
// event type. It reads both the published layout and the stored one of
// a partitioned stream (partition.go), whose partition token it skips.
func (n Names) ParseInput(subject string) (runID, kind, eventType string, err error) {
	rest, ok := strings.CutPrefix(subject, n.prefix+".in.")
	if !ok {
		return "", "", "", fmt.Errorf("subject %q is not a run input of prefix %q", subject, n.prefix)
	}
	parts := strings.Split(rest, ".")
	if len(parts) < 2 {
		return "", "", "", fmt.Errorf("subject %q names no input kind", subject)
	}
	if len(parts) > 2 && isPartitionToken(parts[1]) {
		// Stored in a partitioned stream: the partition follows the run.
		parts = append(parts[:1], parts[2:]...)
	}
	runID, kind = parts[0], parts[1]
	switch {
	case kind == KindEvent && len(parts) == 3:
		eventType = parts[2]
	case kind == KindEvent:
		return "", "", "", fmt.Errorf("subject %q: an event subject ends in event.<type>", subject)
	case len(parts) != 2:
		return "", "", "", fmt.Errorf("subject %q has unexpected tokens after %q", subject, kind)
	case kind != KindStart && kind != KindResult && kind != KindTimer && kind != KindCancel &&
		kind != KindPause && kind != KindResume && kind != KindTerminate && kind != KindPostpone && kind != KindRedrive && kind != KindReset &&
		kind != KindMigrate:
		return "", "", "", fmt.Errorf("subject %q: unknown input kind %q", subject, kind)
	}
	return runID, kind, eventType, nil
}

// ArchiveBucket is the Object Store bucket of runs removed by retention
// with an archive: one object per run id.
func (n Names) ArchiveBucket() string { return n.prefix + "_archive" }

// PayloadBucket is the Object Store bucket of payloads that travel by
// reference: run inputs, events, task invocations and results, and run
// records larger than the payload threshold (docs/PROTOCOL.md, 2.4).
func (n Names) PayloadBucket() string { return n.prefix + "_payloads" }

// JobBucket is the KV bucket of bulk jobs (package bulk), keyed by job id.
func (n Names) JobBucket() string { return n.prefix + "_jobs" }

// HoldAll matches, in the timer stream, the schedules of invocations a
// task version's rate limit holds back (dispatcher/limit.go).
func (n Names) HoldAll() string { return n.prefix + ".hold.>" }

// Hold is the schedule of one held invocation, id a token naming it: the
// server produces the invocation on Release(task, version) at its slot.
func (n Names) Hold(task, version, id string) string {
	return n.prefix + ".hold." + task + "." + VersionToken(version) + "." + id
}

// ReleaseAll matches, in the timer stream, the held invocations the
// server produced at their slots, which the task stream copies.
func (n Names) ReleaseAll() string { return n.prefix + ".release.*.*" }

// Release is where the server produces a task version's held invocations
// in the timer stream (a schedule's target is in its own stream).
func (n Names) Release(task, version string) string {
	return n.prefix + ".release." + task + "." + VersionToken(version)
}

// ReleaseToTask is the subject transform destination the task stream's
// source applies to ReleaseAll, so that Release(t, v) lands on Task(t, v).
func (n Names) ReleaseToTask() string { return n.prefix + ".task.{{wildcard(1)}}.{{wildcard(2)}}" }

// ParseTask splits an invocation subject, Task(task, version), into its
// task name and version token (VersionToken of the version).
func (n Names) ParseTask(subject string) (task, versionToken string, ok bool) {
	rest, found := strings.CutPrefix(subject, n.prefix+".task.")
	if !found {
		return "", "", false
	}
	task, versionToken, ok = strings.Cut(rest, ".")
	if !ok || task == "" || versionToken == "" || strings.Contains(versionToken, ".") {
		return "", "", false
	}
	return task, versionToken, true
}

// LimitsBucket is the KV bucket of the task versions' rate limit state,
// one key per task version (LimitKey), written by the dispatchers.
func (n Names) LimitsBucket() string { return n.prefix + "_limits" }

// LimitKey is a task version's key in LimitsBucket.
func LimitKey(task, version string) string { return task + "." + VersionToken(version) }
