package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/taskconsumer"
	"github.com/jetflow/jetflow/worker"
)

// DeployOptions are the host configuration a deployment carries besides
// its document.
type DeployOptions struct {
	// Policy is the deployment's task retry and timeout policy (parse it
	// with policy.Parse). Default nil: the defaults, and Config.TaskPolicy's
	// StartToClose for every task consumer.
	Policy *policy.Policy
}

// Deployed is what a deploy stored and did.
type Deployed struct {
	registry.Deployment
	// Notes are what the deploy changed that other deployments see, or
	// may not have meant, one sentence each: a task consumer's AckWait
	// that this deploy replaced, a policy entry that names no task of the
	// workflow (a typo, or a file shared by several workflows).
	Notes []string
	// Children are the task versions the policy binds to a workflow
	// (docs/CHILDREN.md), in the order of Tasks: invoking one starts a
	// child run, no worker pulls it, so the deploy makes no consumer for
	// it.
	Children []ChildTask
}

// ChildTask is a task version of a deployment that runs as a child
// workflow.
type ChildTask struct {
	registry.TaskRef
	// Workflow is the workflow its child runs run.
	Workflow string
	// Cascade says whether the parent's operations reach the child.
	Cascade bool
}

// Deploy validates and stores a workflow document under name, and creates
// the durable consumer of every task it invokes so that workers in any
// language only bind. It is DeployWith without a policy.
func (f *Fleet) Deploy(ctx context.Context, name string, doc []byte) (registry.Deployment, error) {
	d, err := f.DeployWith(ctx, name, doc, DeployOptions{})
	return d.Deployment, err
}

// DeployWith deploys doc with opts.Policy, stored with the revision, and
// sets each task consumer's AckWait to the task version's startToClose.
// A task consumer is shared by every workflow that invokes the task
// version, so when deployments disagree the latest deploy wins: a changed
// AckWait is logged and listed in Notes.
func (f *Fleet) DeployWith(ctx context.Context, name string, doc []byte, opts DeployOptions) (Deployed, error) {
	d, err := f.Registry.DeployWithPolicy(ctx, name, doc, opts.Policy)
	out := Deployed{Deployment: d}
	if err != nil {
		return out, err
	}
	out.Notes = unusedEntries(d)
	bound := d.Policy.Children()
	for _, t := range d.Tasks {
		if b, ok := bound[t.Task+"@"+t.Version]; ok {
			// No worker will ever pull a bound version's invocations: no
			// consumer. One an earlier deploy made is left (another
			// workflow may invoke the version unbound), and said.
			out.Children = append(out.Children, ChildTask{TaskRef: t, Workflow: b.Workflow, Cascade: b.Cascade})
			_, cfg, err := f.taskConsumerConfig(ctx, t)
			if err != nil {
				return out, err
			}
			if cfg != nil {
				out.Notes = append(out.Notes, fmt.Sprintf("task %s@%s runs as a child workflow (%s) in workflow %q revision %q, but its consumer %s exists (an earlier deploy made it): it stays for the workflows that invoke %s@%s unbound",
					t.Task, t.Version, b.Workflow, d.Name, d.Revision, f.Names.TaskConsumer(t.Task, t.Version), t.Task, t.Version))
			}
			continue
		}
		tp := f.cfg.TaskPolicy
		if stc := d.Policy.StartToClose(t.Task, t.Version); stc > 0 {
			tp.StartToClose = stc
		}
		lim := d.Policy.Limits(t.Task, t.Version)
		if lim.MaxConcurrency > 0 {
			tp.MaxAckPending = lim.MaxConcurrency
		}
		tp.RatePerSecond, tp.RateBurst = lim.RatePerSecond, lim.RateBurst
		tp = tp.WithDefaults()
		before, beforeCfg, err := f.taskConsumerConfig(ctx, t)
		if err != nil {
			return out, err
		}
		if beforeCfg != nil {
			out.Notes = append(out.Notes, f.limitNotes(d, t, tp, *beforeCfg)...)
		}
		if _, err := provision.EnsureTaskConsumer(ctx, f.JS, f.Names, t.Task, t.Version, tp); err != nil {
			return out, err
		}
		if before != 0 && before != tp.StartToClose {
			note := fmt.Sprintf("task %s@%s: consumer %s now redelivers after %s instead of %s (startToClose of workflow %q revision %q; the latest deploy wins for every workflow invoking %s@%s)",
				t.Task, t.Version, f.Names.TaskConsumer(t.Task, t.Version), tp.StartToClose, before, d.Name, d.Revision, t.Task, t.Version)
			if tp.StartToClose < before {
				// Workers re-read AckWait every ConsumerRefresh and pace
				// heartbeats by it (at least that often by default).
				note += fmt.Sprintf("; running workers follow within their ConsumerRefresh (default %s)", worker.DefaultConsumerRefresh)
				if tp.StartToClose <= 2*worker.DefaultConsumerRefresh {
					note += fmt.Sprintf(", and their invocations that started before may be redelivered once, having gone %s without a heartbeat", tp.StartToClose)
				}
			}
			out.Notes = append(out.Notes, note)
			f.cfg.Logger.Warn("fleet: deploy changed a task consumer's AckWait", slog.String("workflow", d.Name), slog.String("revision", d.Revision),
				slog.String("task", t.Task), slog.String("version", t.Version), slog.Duration("before", before), slog.Duration("after", tp.StartToClose))
		}
	}
	return out, nil
}

// unusedEntries notes the policy entries that match no task d invokes.
func unusedEntries(d registry.Deployment) []string {
	var notes []string
	for _, key := range d.Policy.Keys() {
		if key == policy.Wildcard {
			continue
		}
		task, version, exact := strings.Cut(key, "@")
		used := slices.ContainsFunc(d.Tasks, func(t registry.TaskRef) bool {
			return t.Task == task && (!exact || t.Version == version)
		})
		if !used {
			notes = append(notes, fmt.Sprintf("policy entry %q matches no task of workflow %q revision %q", key, d.Name, d.Revision))
		}
	}
	return notes
}

// taskConsumerConfig is the AckWait and configuration of a task
// version's consumer, 0 and nil if it has none yet.
func (f *Fleet) taskConsumerConfig(ctx context.Context, t registry.TaskRef) (time.Duration, *jetstream.ConsumerConfig, error) {
	c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), f.Names.TaskConsumer(t.Task, t.Version))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading consumer %q on stream %q: %w", f.Names.TaskConsumer(t.Task, t.Version), f.Names.TaskStream(), err)
	}
	cfg := c.CachedInfo().Config
	return cfg.AckWait, &cfg, nil
}

// limitNotes are the notes of a deploy that changes a task version's
// concurrency or rate limit, which its consumer holds for every workflow
// invoking it: the latest deploy wins, as for AckWait.
func (f *Fleet) limitNotes(d registry.Deployment, t registry.TaskRef, tp provision.TaskPolicy, before jetstream.ConsumerConfig) []string {
	var notes []string
	whose := fmt.Sprintf("(policy of workflow %q revision %q; the latest deploy wins for every workflow invoking %s@%s)", d.Name, d.Revision, t.Task, t.Version)
	if before.MaxAckPending != tp.MaxAckPending {
		notes = append(notes, fmt.Sprintf("task %s@%s: at most %d attempts in flight instead of %d %s", t.Task, t.Version, tp.MaxAckPending, before.MaxAckPending, whose))
	}
	rate, burst := taskconsumer.Rate(before)
	if rate != tp.RatePerSecond || burst != tp.RateBurst {
		notes = append(notes, fmt.Sprintf("task %s@%s: rate limit %s instead of %s %s", t.Task, t.Version, describeRate(tp.RatePerSecond, tp.RateBurst), describeRate(rate, burst), whose))
	}
	return notes
}

func describeRate(perSecond float64, burst int) string {
	if perSecond <= 0 {
		return "none"
	}
	return fmt.Sprintf("%g/s (burst %d)", perSecond, burst)
}

// TaskPolicy is the task consumer policy a deploy applies where the
// deployment's policy sets no startToClose, with its defaults.
func (f *Fleet) TaskPolicy() provision.TaskPolicy { return f.cfg.TaskPolicy.WithDefaults() }
