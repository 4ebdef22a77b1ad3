// Package security says what least privilege means for a jetflow
// deployment on NATS: the exact subjects each role may publish and
// subscribe to, derived from subjects.Names, and a ready nats-server
// configuration (accounts, nkey users, TLS, payload limit) built from
// them. docs/SECURITY.md explains the roles; its configuration file is
// generated here and checked by a test.
package security

import (
	"fmt"
	"slices"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
)

// Permissions are the subjects one NATS user may publish and subscribe
// to; everything else is denied.
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// join merges permissions, keeping the first occurrence of each subject.
func join(ps ...Permissions) Permissions {
	var out Permissions
	for _, p := range ps {
		for _, s := range p.Publish {
			if !slices.Contains(out.Publish, s) {
				out.Publish = append(out.Publish, s)
			}
		}
		for _, s := range p.Subscribe {
			if !slices.Contains(out.Subscribe, s) {
				out.Subscribe = append(out.Subscribe, s)
			}
		}
	}
	return out
}

// InboxPrefix is the reply-inbox prefix of a user: every client of a role
// must connect with nats.CustomInboxPrefix(InboxPrefix(user)), because a
// user allowed to subscribe to the shared "_INBOX.>" could read every
// other client's replies (pulled invocations, run records).
func InboxPrefix(user string) string { return "_INBOX_" + user }

func inbox(user string) string { return InboxPrefix(user) + ".>" }

// kvRead lets a user read keys of bucket matching key (a KV key pattern)
// with direct gets, the way nats.go reads.
func kvRead(n subjects.Names, bucket, key string) []string {
	return []string{n.API("STREAM.INFO", n.KVStream(bucket)), n.API("DIRECT.GET", n.KVStream(bucket), n.KVKey(bucket, key))}
}

// Dispatcher may consume every run input (from the shared consumer or
// from the partitions' own, announcing itself to the other dispatchers
// on a subject of its own), read and write run records,
// read deployed workflows (and create the token secret once), publish
// invocations, timer and removal schedules and status announcements,
// purge a settled run's schedules from the timer stream, and purge a run
// removed by retention from the input stream (only by its subjects; the
// stream obeys no header that purges). It is the only role with any right
// on the timer stream, whose messages obey scheduling headers, and the
// only one that may purge history. It may not deploy, provision or
// delete.
func Dispatcher(n subjects.Names, user string) Permissions {
	in, c, tm := n.InputStream(), n.DispatcherConsumer(), n.TimerStream()
	runs, wfs := n.RunBucket(), n.WorkflowBucket()
	api, kvStream := n.API, n.KVStream
	pub := []string{
		api("STREAM.INFO", in), api("STREAM.INFO", tm), api("STREAM.PURGE", tm), api("STREAM.INFO", n.TaskStream()),
		// Retention: a removed run's history (dispatcher/retention.go).
		api("STREAM.PURGE", in),
		api("CONSUMER.CREATE", in, c), api("CONSUMER.CREATE", in, c, ">"), api("CONSUMER.DURABLE.CREATE", in, c),
		api("CONSUMER.INFO", in, c), api("CONSUMER.MSG.NEXT", in, c), n.Ack(in, c),
		// A partitioned stream (dispatcher/partitions.go): the consumer of
		// each partition it owns (created with its partition's filter, a
		// run-input subject), and the heartbeats that share them out.
		api("CONSUMER.INFO", in, "*"), n.Ack(in, "*"), n.DispatcherHeartbeats(),
		// Whether an input of a run without a record has a start before
		// it (dispatcher/early.go): the first start of one run, read
		// through the stream leader; and, message by message, the
		// history of a run it rebuilds for a reset (replay.Rewind).
		api("STREAM.MSG.GET", in),
		// Before removals by retention, the runs' latest redrives and
		// resets, many runs a request (dispatcher/revival.go).
		api("DIRECT.GET", in),
		n.TaskAll(), n.ScheduleAll(), n.StatusAll(),
		// Sequence pages of the runs' applied inputs, in the input stream
		// beside their history (dispatcher/pages.go): only dispatchers
		// write them; a history read gets them with DIRECT.GET above.
		n.PagesAll(),
		// Batched removal (dispatcher/reaper.go): due entries and bucket
		// schedules, the shared reaper consumer of bucket fires, and an
		// ordered consumer reading one bucket's due entries.
		n.ReapDueAll(), n.ReapSchedules(),
		api("CONSUMER.CREATE", tm, n.ReaperConsumer()), api("CONSUMER.CREATE", tm, n.ReaperConsumer(), ">"),
		api("CONSUMER.DURABLE.CREATE", tm, n.ReaperConsumer()), api("CONSUMER.INFO", tm, n.ReaperConsumer()),
		api("CONSUMER.MSG.NEXT", tm, n.ReaperConsumer()), n.Ack(tm, n.ReaperConsumer()),
		api("CONSUMER.CREATE", tm, "*", n.ReapDueAll()), api("CONSUMER.DELETE", tm, "*"), api("CONSUMER.MSG.NEXT", tm, "*"),
		// A deadline fire of a paused task version (provision.PauseTask):
		// whether its consumer is paused, and the postpone input it sends
		// the run instead (dispatcher/postpone.go).
		api("CONSUMER.INFO", n.TaskStream(), "*"), n.Postpone("*"),
		// A worker's retry-after that closes its task version
		// (wire.TaskError.CloseTask): the dispatcher that applies the
		// result pauses the version's consumer, never shortening a
		// pause (dispatcher/postpone.go).
		api("CONSUMER.PAUSE", n.TaskStream(), "*"),
		api("STREAM.INFO", kvStream(runs)), api("DIRECT.GET", kvStream(runs), ">"), api("STREAM.MSG.GET", kvStream(runs)), n.KVKeys(runs),
		api("STREAM.INFO", kvStream(wfs)), api("DIRECT.GET", kvStream(wfs), ">"), api("STREAM.MSG.GET", kvStream(wfs)),
		n.KVKey(wfs, token.Key),
		// The watch of the workflows' revision lists (registry.Registry.WatchLatest):
		// an ordered consumer delivering to the dispatcher's own inbox.
		api("CONSUMER.CREATE", kvStream(wfs), "*", n.KVKey(wfs, "name.>")), api("CONSUMER.DELETE", kvStream(wfs), "*"),
		n.FlowControl(kvStream(wfs)),
	}
	return join(Permissions{Publish: pub, Subscribe: []string{inbox(user), n.DispatcherHeartbeats()}}, bulkJobs(n), archiveWrite(n), runIndex(n), scheduleRunner(n), rateLimits(n), queueAdmission(n), childRuns(n), payloadAll(n), startControls(n), triggerBucket(n))
}

// triggerBucket is what a dispatcher's trigger runner needs to follow the
// deployed triggers (package trigger): reading the trigger bucket and
// watching it (an ordered consumer of its keys). Running a subject
// trigger needs TriggerRunner too, which names the triggers.
func triggerBucket(n subjects.Names) Permissions {
	b := n.TriggerBucket()
	kv := n.KVStream(b)
	return Permissions{Publish: append(kvRead(n, b, ">"),
		n.API("STREAM.MSG.GET", kv), n.API("CONSUMER.CREATE", kv, "*", n.KVKeys(b)), n.API("CONSUMER.DELETE", kv, "*"), n.FlowControl(kv),
	)}
}

// TriggerRunner is what a dispatcher needs, with Dispatcher, to run the
// subject triggers named (docs/TRIGGERS.md): make sure of each one's
// stream (over the trigger's application subject) and durable consumer,
// take and acknowledge its messages, and send the events event triggers
// deliver. A stream's name is one token of the server's API subjects, so
// no wildcard can grant "every trigger's stream": the generated
// configuration names the deployment's triggers (DeploymentUsers), and a
// trigger deployed later needs its grant before a dispatcher can run it
// (until then the dispatcher logs the refusal and runs the others).
func TriggerRunner(n subjects.Names, triggers ...string) (Permissions, error) {
	pub := []string{n.Event("*", "*")}
	for _, name := range triggers {
		if err := subjects.CheckTriggerName(name); err != nil {
			return Permissions{}, fmt.Errorf("security: %w", err)
		}
		st, c := n.TriggerStream(name), n.TriggerConsumer()
		pub = append(pub,
			n.API("STREAM.INFO", st), n.API("STREAM.CREATE", st), n.API("STREAM.UPDATE", st),
			n.API("CONSUMER.CREATE", st, c), n.API("CONSUMER.DURABLE.CREATE", st, c), n.API("CONSUMER.INFO", st, c),
			n.API("CONSUMER.MSG.NEXT", st, c), n.Ack(st, c),
		)
	}
	return Permissions{Publish: pub}, nil
}

// startControls is what a dispatcher needs to decide starts'
// idempotency, singleton and debounce keys (package startctl,
// docs/STARTS.md): reading and writing the start key and singleton
// buckets (compare-and-swap), and reading the last hold of a debounce key
// in the timer stream (its schedules are inside ScheduleAll, already
// granted).
func startControls(n subjects.Names) Permissions {
	var pub []string
	for _, b := range []string{n.StartKeyBucket(), n.SingletonBucket()} {
		kv := n.KVStream(b)
		pub = append(pub, n.API("STREAM.INFO", kv), n.API("DIRECT.GET", kv, ">"), n.API("STREAM.MSG.GET", kv), n.KVKeys(b))
	}
	return Permissions{Publish: append(pub, n.API("STREAM.MSG.GET", n.TimerStream()))}
}

// startDecisions lets a client read the decisions on starts that did
// not start their run (client.StartDecided, status): direct gets of the
// start key bucket's run.* keys, never the keys' own entries.
func startDecisions(n subjects.Names) []string {
	return kvRead(n, n.StartKeyBucket(), subjects.StartDecisions())
}

// queueAdmission is what a dispatcher needs for queued invocations
// (dispatcher/queue.go): publishing them to the queue stream, reading
// the whole queue with an ordered consumer, deleting what it moved onto
// the task subjects, and reading whether a moved invocation is still in
// the task stream (a key's attempts in flight). No other role has any
// right on the queue stream.
func queueAdmission(n subjects.Names) Permissions {
	q := n.QueueStream()
	return Permissions{Publish: []string{
		n.QueueAll(), n.API("STREAM.INFO", q), n.API("STREAM.MSG.DELETE", q),
		n.API("CONSUMER.CREATE", q, "*", n.QueueAll()), n.API("CONSUMER.DELETE", q, "*"), n.API("CONSUMER.MSG.NEXT", q, "*"),
		n.API("STREAM.MSG.GET", n.TaskStream()),
	}}
}

// rateLimits is what a dispatcher needs to keep the task versions' rate
// limits (dispatcher/limit.go): the limits bucket, whose state it moves
// forward with compare-and-swap, and the schedules that hold an
// invocation back until its slot in the timer stream (their releases
// are the server's, on P.release.*.*, which no role publishes).
func rateLimits(n subjects.Names) Permissions {
	lim := n.KVStream(n.LimitsBucket())
	return Permissions{Publish: []string{
		n.API("STREAM.INFO", lim), n.API("DIRECT.GET", lim, ">"), n.API("STREAM.MSG.GET", lim), n.KVKeys(n.LimitsBucket()),
		n.HoldAll(),
	}}
}

// childRuns is what a dispatcher needs for child runs (docs/CHILDREN.md):
// the starts of the children a parent's bound tasks start, the result a
// settled child sends its parent, and the parent's pause, resume,
// terminate and cancel cascading to its children.
func childRuns(n subjects.Names) Permissions {
	return Permissions{Publish: []string{
		n.Start("*"), n.Result("*"), n.Pause("*"), n.Resume("*"), n.Terminate("*"), n.Cancel("*"),
	}}
}

// scheduleRunner is what a dispatcher's schedule runner needs (package
// schedule): the schedule stream's durable consumer of fires, reading
// definitions and state (direct gets), writing state and the one-shot
// schedules that delay a fire (jitter, a waiting start), deleting the
// fires it took, and publishing the starts of the runs fires start. It
// may not write a definition: creating, pausing and deleting schedules is
// the operator's (Scheduler).
func scheduleRunner(n subjects.Names) Permissions {
	st, c := n.ScheduleStream(), n.ScheduleConsumer()
	return Permissions{Publish: []string{
		n.API("STREAM.INFO", st), n.API("DIRECT.GET", st, ">"), n.API("STREAM.MSG.GET", st), n.API("STREAM.MSG.DELETE", st),
		n.API("CONSUMER.CREATE", st, c), n.API("CONSUMER.CREATE", st, c, ">"), n.API("CONSUMER.DURABLE.CREATE", st, c),
		n.API("CONSUMER.INFO", st, c), n.API("CONSUMER.MSG.NEXT", st, c), n.Ack(st, c),
		n.ScheduleState("*"), n.ScheduleJitterAt("*", "*"), n.Start("*"),
	}}
}

// Scheduler may create, list, pause, resume, trigger and delete schedules
// (jetflow schedule, docs/SCHEDULES.md): publish definitions and triggers
// in the schedule stream, read it (direct gets) and purge a schedule's
// subjects. A definition is a message schedule, and the only subjects it
// can target are schedules' fires in that stream, so the grant reaches no
// run input directly; each fire starts a run of the workflow its
// definition names, so grant it only to operators (the generated
// configuration's operator has it, as everything).
func Scheduler(n subjects.Names) Permissions {
	st := n.ScheduleStream()
	return Permissions{Publish: []string{
		n.API("STREAM.INFO", st), n.API("DIRECT.GET", st, ">"), n.API("STREAM.MSG.GET", st), n.API("STREAM.PURGE", st),
		n.ScheduleDef("*"), n.ScheduleTrigger("*"),
	}}
}

// payloadRead is what resolving a payload by reference needs
// (docs/PROTOCOL.md 2.4): the bucket's stream info, and direct gets of an
// object's info (the last message on its meta subject) and of its chunks
// (the next message on its chunk subject). No consumer: a consumer's
// creator chooses where the server delivers its messages, which could be
// a run-input subject, and the chunks are whatever their writer wrote.
func payloadRead(n subjects.Names) Permissions {
	obj := n.ObjectStream(n.PayloadBucket())
	return Permissions{Publish: []string{n.API("STREAM.INFO", obj), n.API("DIRECT.GET", obj), n.API("DIRECT.GET", obj, ">")}}
}

// payloadWrite is what sending a payload by reference needs: publishing
// an object's chunks and its info, after a look at whether it is there.
func payloadWrite(n subjects.Names) Permissions {
	return join(payloadRead(n), Permissions{Publish: []string{n.ObjectSubjects(n.PayloadBucket())}})
}

// payloadAll is a dispatcher's: reading and writing, and deleting a
// removed run's objects (a listing of the bucket through an ordered
// consumer of its infos, then a purge of each object's chunks and info).
func payloadAll(n subjects.Names) Permissions {
	obj := n.ObjectStream(n.PayloadBucket())
	return join(payloadWrite(n), Permissions{Publish: []string{
		n.API("STREAM.PURGE", obj), n.API("STREAM.MSG.GET", obj),
		n.API("CONSUMER.CREATE", obj), n.API("CONSUMER.CREATE", obj, ">"), n.API("CONSUMER.DELETE", obj, ">"), n.FlowControl(obj),
	}})
}

// archiveWrite is what a dispatcher needs to archive a run before
// retention removes it (dispatcher/reaper.go): consumers on run-input
// subjects (the run's history is read by its subjects, replay.ReadHistory,
// with the dispatcher's STREAM.INFO and DIRECT.GET of the input stream)
// and write one object of the archive bucket, replacing an earlier one
// (a purge of its chunks).
func archiveWrite(n subjects.Names) Permissions {
	in, obj := n.InputStream(), n.ObjectStream(n.ArchiveBucket())
	return Permissions{Publish: []string{
		n.API("CONSUMER.CREATE", in, "*", n.RunInputs("*")), n.API("CONSUMER.DELETE", in, "*"), n.API("CONSUMER.MSG.NEXT", in, "*"),
		n.ObjectSubjects(n.ArchiveBucket()),
		n.API("STREAM.INFO", obj), n.API("STREAM.PURGE", obj), n.API("DIRECT.GET", obj, ">"), n.API("STREAM.MSG.GET", obj),
	}}
}

// archiveRead is what reading an archived run needs (status, history and
// replay of a removed run): an object of the archive bucket, whose chunks
// an ordered push consumer delivers.
func archiveRead(n subjects.Names) Permissions {
	obj := n.ObjectStream(n.ArchiveBucket())
	return Permissions{Publish: []string{
		n.API("STREAM.INFO", obj), n.API("DIRECT.GET", obj, ">"), n.API("STREAM.MSG.GET", obj),
		n.API("CONSUMER.CREATE", obj), n.API("CONSUMER.CREATE", obj, ">"), n.API("CONSUMER.DELETE", obj, ">"), n.FlowControl(obj),
	}}
}

// runIndex is what a dispatcher's indexer needs (package runindex): its
// durable consumer of the run bucket's stream, and writing the index
// stream (entries and heads, direct gets of the heads, purges of the
// subjects a run left).
func runIndex(n subjects.Names) Permissions {
	runs, c, idx := n.KVStream(n.RunBucket()), n.IndexerConsumer(), n.IndexStream()
	return Permissions{Publish: []string{
		n.API("CONSUMER.CREATE", runs, c), n.API("CONSUMER.CREATE", runs, c, ">"), n.API("CONSUMER.DURABLE.CREATE", runs, c),
		n.API("CONSUMER.INFO", runs, c), n.API("CONSUMER.MSG.NEXT", runs, c), n.Ack(runs, c),
		n.API("STREAM.INFO", idx), n.API("DIRECT.GET", idx), n.API("STREAM.PURGE", idx), n.IndexAll(),
	}}
}

// indexRead is what a listing needs (client.ListRuns): the index
// stream's state and direct gets of it, and whether the indexers have
// caught up with the run bucket.
func indexRead(n subjects.Names) []string {
	runs := n.KVStream(n.RunBucket())
	return []string{
		n.API("STREAM.INFO", n.IndexStream()), n.API("DIRECT.GET", n.IndexStream()),
		n.API("STREAM.INFO", runs), n.API("CONSUMER.INFO", runs, n.IndexerConsumer()),
		n.API("STREAM.INFO", n.InputStream()), // its last sequence: no run started later (--sort start)
	}
}

// bulkJobs is what a dispatcher's bulk-job runner needs (package bulk):
// the job bucket (read, write, watch), a scan of the run bucket (an
// ordered consumer), and publishing the per-run operations' inputs
// (cancel today) for the runs a job matches. Only dispatchers publish
// those for jobs; submitting a job is the operator's.
func bulkJobs(n subjects.Names) Permissions {
	jobs, runs := n.KVStream(n.JobBucket()), n.KVStream(n.RunBucket())
	return Permissions{Publish: []string{
		n.API("STREAM.INFO", jobs), n.API("DIRECT.GET", jobs, ">"), n.API("STREAM.MSG.GET", jobs), n.KVKeys(n.JobBucket()),
		n.API("CONSUMER.CREATE", jobs, ">"), n.API("CONSUMER.DELETE", jobs, ">"), n.FlowControl(jobs),
		n.API("CONSUMER.CREATE", runs, ">"), n.API("CONSUMER.DELETE", runs, ">"), n.FlowControl(runs),
		n.Cancel("*"), n.Pause("*"), n.Resume("*"), n.Terminate("*"), n.Redrive("*"),
		// A migration job's check is the dispatcher's (replay.Migration).
		n.Migrate("*"),
	}}
}

// Worker may pull, acknowledge and heartbeat the invocations of one task
// version (binding its consumer, never creating one) and publish results.
// Results name any run: the per-invocation token, not the subject, is what
// stops a worker answering for another task (package token).
func Worker(n subjects.Names, user, task, version string) (Permissions, error) {
	if err := subjects.CheckTask(task); err != nil {
		return Permissions{}, err
	}
	if err := subjects.CheckVersion(version); err != nil {
		return Permissions{}, err
	}
	ts, c := n.TaskStream(), n.TaskConsumer(task, version)
	return join(Permissions{
		Publish: []string{
			n.API("CONSUMER.INFO", ts, c), n.API("CONSUMER.MSG.NEXT", ts, c), n.Ack(ts, c),
			n.Result("*"),
		},
		Subscribe: []string{inbox(user)},
	}, payloadWrite(n)), nil
}

// Publisher input kinds a Publisher may be given.
var publisherKinds = []string{
	subjects.KindStart, subjects.KindEvent, subjects.KindCancel,
	subjects.KindPause, subjects.KindResume, subjects.KindTerminate, subjects.KindRedrive, subjects.KindReset,
}

// Publisher may publish the given run inputs: any of subjects.KindStart,
// KindEvent and KindCancel (an event source gets KindEvent only), and the
// operator's KindPause, KindResume, KindTerminate, KindRedrive (which
// restarts failed work) and KindReset (which takes a run back to an
// earlier state), which no role but the operator has unless a
// deployment grants them this way (to an operations tool, not to
// applications). It may
// bind the run bucket (client.New does; stream info only), never read a
// record. Results and timers are never a publisher's. Whatever headers it
// sets, the input stream refuses those that act on other messages
// (provision.InputStreamConfig).
func Publisher(n subjects.Names, user string, kinds ...string) (Permissions, error) {
	pub := []string{n.API("STREAM.INFO", n.KVStream(n.RunBucket()))}
	large := false
	for _, k := range kinds {
		switch k {
		case subjects.KindStart:
			pub, large = append(pub, n.Start("*")), true
			// The decision on a start with controls (docs/STARTS.md).
			pub = append(pub, startDecisions(n)...)
		case subjects.KindEvent:
			pub, large = append(pub, n.Event("*", "*")), true
		case subjects.KindCancel:
			pub = append(pub, n.Cancel("*"))
		case subjects.KindPause:
			pub = append(pub, n.Pause("*"))
		case subjects.KindResume:
			pub = append(pub, n.Resume("*"))
		case subjects.KindTerminate:
			pub = append(pub, n.Terminate("*"))
		case subjects.KindRedrive:
			pub = append(pub, n.Redrive("*"))
		case subjects.KindReset:
			pub = append(pub, n.Reset("*"))
		default:
			return Permissions{}, fmt.Errorf("security: a publisher may publish %v, not %q", publisherKinds, k)
		}
	}
	p := Permissions{Publish: pub, Subscribe: []string{inbox(user)}}
	if large {
		// Large run inputs and events travel by reference.
		p = join(p, payloadWrite(n))
	}
	return p, nil
}

// Observer may read run records (direct gets, as client.Status and
// client.Wait do), list runs from the run index (direct gets of its
// stream) and subscribe to status announcements; it changes nothing. It
// gets no consumer rights, so no watches or scans: a consumer's creator
// chooses where the server delivers its messages, which could be a
// run-input subject. Give Watcher to trusted readers that need them.
func Observer(n subjects.Names, user string) Permissions {
	return join(Permissions{
		Publish:   kvRead(n, n.RunBucket(), ">"),
		Subscribe: []string{n.StatusAll(), inbox(user)},
	}, Permissions{Publish: indexRead(n)}, payloadRead(n), Permissions{Publish: startDecisions(n)})
}

// Watcher adds to Observer what a watch or listing of the run bucket
// needs (an ephemeral ordered consumer), and reading archived runs (an
// ordered consumer of the archive bucket). The server delivers such a
// consumer's messages wherever its creator says, so grant it only to
// processes trusted not to aim them at run inputs (the console).
func Watcher(n subjects.Names, user string) Permissions {
	runs := n.KVStream(n.RunBucket())
	return join(Observer(n, user), Permissions{Publish: []string{
		n.API("CONSUMER.CREATE", runs, ">"), n.API("CONSUMER.DELETE", runs, ">"), n.FlowControl(runs),
	}}, archiveRead(n))
}

// AuditWriter may append entries of one source (subjects.AuditConsole
// or subjects.AuditCLI) to the audit log, and nothing else there: grant
// it, with Watcher and the Publisher kinds its actions send, to a console
// that acts without the operator's rights. Entries cannot be deleted or
// purged by anyone (provision.AuditStreamConfig).
func AuditWriter(n subjects.Names, source string) (Permissions, error) {
	if source != subjects.AuditConsole && source != subjects.AuditCLI {
		return Permissions{}, fmt.Errorf("security: an audit source is %q or %q, not %q", subjects.AuditConsole, subjects.AuditCLI, source)
	}
	return Permissions{Publish: []string{n.Audit(source, "*")}}, nil
}

// AuditReader may read the audit log (`jetflow audit`, the console's
// Audit page): the stream's state and direct gets by sequence, no
// consumer. The log says who did what to which run; in the generated
// configuration only the operator reads it.
func AuditReader(n subjects.Names) Permissions {
	return Permissions{Publish: []string{n.API("STREAM.INFO", n.AuditStream()), n.API("DIRECT.GET", n.AuditStream())}}
}

// Operator may do anything in the account: provision streams and
// buckets, deploy workflows, create task consumers, store the token
// secret, inspect and repair. Keep its credentials off the data path.
func Operator() Permissions {
	return Permissions{Publish: []string{">"}, Subscribe: []string{">"}}
}
