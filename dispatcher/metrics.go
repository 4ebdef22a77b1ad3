package dispatcher

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Message outcomes, the "outcome" label of jetflow_dispatcher_messages_total.
const (
	outcomeApplied         = "applied"          // the reducer applied it; state saved
	outcomeDuplicate       = "duplicate"        // already applied: outbox re-published, acked
	outcomeRejected        = "rejected"         // run.ErrRejected: recorded, acked
	outcomeUnknownRun      = "unknown_run"      // no such run: logged, acked
	outcomeMalformed       = "malformed"        // cannot parse: terminated
	outcomeUnknownWorkflow = "unknown_workflow" // workflow not deployed: terminated
	outcomeFailed          = "failed"           // reducer or record fault: terminated
	outcomeRetry           = "retry"            // transient failure: redelivered later
	outcomeAbandoned       = "abandoned"        // the dispatcher stopped: handed back
	outcomePostponed       = "postponed"        // a deadline fire of a paused task: postponed, handed back
	outcomeRemoved         = "removed"          // a removal by retention carried out: acked
	outcomeRemovedRun      = "removed_run"      // an input of a run removed by retention: terminated
	outcomeStartHeld       = "start_held"       // a debounced start, or one queued behind a singleton: held in the timer stream, acked
	outcomeStartDuplicate  = "start_duplicate"  // a start whose idempotency key started another run: recorded, acked
	outcomeStartRefused    = "start_refused"    // a start the active run of its singleton key refused: recorded, acked
	outcomeDeferred        = "deferred"         // a removal input before a late redrive or reset: handed back until it is taken
)

type metrics struct {
	started    prometheus.Counter
	settled    *prometheus.CounterVec
	messages   *prometheus.CounterVec
	conflicts  prometheus.Counter
	redelivery prometheus.Counter
	step       *prometheus.HistogramVec
	// removed counts runs removed by retention, by the status they
	// settled with; removalFailures the removals that failed a step
	// (retried by redelivery).
	removed         *prometheus.CounterVec
	removalFailures prometheus.Counter
	// strayBatched counts inputs for no run that a batched judgement of
	// the stray lane terminated (strays.go).
	strayBatched prometheus.Counter
	// indexers is how many run indexers the process runs (runIndex).
	indexers  prometheus.Gauge
	stepLimit prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "runs_started_total",
			Help: "Runs created by an applied start message.",
		}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "runs_settled_total",
			Help: "Runs that reached a terminal status, by status.",
		}, []string{"status"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "messages_total",
			Help: "Run inputs handled, by kind and outcome.",
		}, []string{"kind", "outcome"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "cas_conflicts_total",
			Help: "Run saves that lost a compare-and-swap race and were reapplied.",
		}),
		redelivery: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "redeliveries_total",
			Help: "Run inputs received more than once.",
		}),
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "step_seconds",
			Help:    "Time from receiving a run input to acknowledging it, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"kind"}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "runs_removed_total",
			Help: "Settled runs removed by retention, by the status they settled with.",
		}, []string{"status"}),
		removalFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "removal_failures_total",
			Help: "Removals by retention that failed a write or a purge (the removal input is redelivered).",
		}),
		strayBatched: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "strays_batch_terminated_total",
			Help: "Inputs for no run terminated by a batched judgement of the stray lane (also counted in messages_total).",
		}),
		stepLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "step_limit",
			Help: "Steps this process runs at once: Config.Concurrency, halved when a round trip to NATS times out and back up by one for each limit's worth of steps that complete.",
		}),
		indexers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "jetflow", Subsystem: "dispatcher", Name: "run_indexers",
			Help: "Run indexers this process runs: 1 on the dispatcher that owns partition 0 (every dispatcher of an unpartitioned deployment), 0 elsewhere.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.started = register(reg, m.started, &err)
	m.settled = register(reg, m.settled, &err)
	m.messages = register(reg, m.messages, &err)
	m.conflicts = register(reg, m.conflicts, &err)
	m.redelivery = register(reg, m.redelivery, &err)
	m.step = register(reg, m.step, &err)
	m.removed = register(reg, m.removed, &err)
	m.removalFailures = register(reg, m.removalFailures, &err)
	m.strayBatched = register(reg, m.strayBatched, &err)
	m.indexers = register(reg, m.indexers, &err)
	m.stepLimit = register(reg, m.stepLimit, &err)
	return m, err
}

// register registers c, or returns the identical collector another
// dispatcher on the same registry registered first.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if err != nil && *errp == nil {
		*errp = err
	}
	return c
}
