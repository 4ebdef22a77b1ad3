package bench

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Report is what one bench run measured. It encodes as JSON; Markdown
// renders it as tables.
type Report struct {
	// Command is the command line that produced the report.
	Command string    `json:"command"`
	Short   bool      `json:"short"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Host    Host      `json:"host"`
	// Config holds the counts the phases ran with.
	Config  ReportConfig  `json:"config"`
	Setups  []SetupReport `json:"setups"`
	Targets []Target      `json:"targets"`
}

// ReportConfig is the part of Config a reader needs to judge the figures.
type ReportConfig struct {
	Runs              int     `json:"runs"`
	DurationSeconds   float64 `json:"duration_seconds"`
	Window            int     `json:"window"`
	SerialRuns        int     `json:"serial_runs"`
	Warmup            int     `json:"warmup"`
	ParkedRuns        int     `json:"parked_runs"`
	TimerRuns         int     `json:"timer_runs,omitempty"`
	ConsoleRuns       int     `json:"console_runs,omitempty"`
	PayloadSize       int     `json:"payload_size,omitempty"`
	RawOps            int     `json:"raw_ops"`
	WorkerConcurrency int     `json:"worker_concurrency"`
}

// Host describes the machine, and how busy it was.
type Host struct {
	OS         string     `json:"os"`
	Arch       string     `json:"arch"`
	CPUs       int        `json:"cpus"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	GoVersion  string     `json:"go_version"`
	NATSServer string     `json:"nats_server"`
	LoadBefore [3]float64 `json:"load_before"`
	LoadAfter  [3]float64 `json:"load_after"`
}

// SetupReport is one deployment's figures.
type SetupReport struct {
	Setup       string `json:"setup"`
	Mode        Mode   `json:"mode"`
	Dispatchers int    `json:"dispatchers"`
	Workers     int    `json:"workers"`
	Replicas    int    `json:"replicas"`
	// Durability is how the servers synced their stores: "" for the
	// default, "fsync", or "sync-interval=D".
	Durability string `json:"durability,omitempty"`
	// Round is Setup.Round: 0 for a setup measured once.
	Round int `json:"round,omitempty"`
	// Load is the load average when the setup started.
	Load      [3]float64       `json:"load"`
	Raw       []RawOp          `json:"raw"`
	Scenarios []ScenarioReport `json:"scenarios"`
	// Handover is measured last on a partitioned setup of two or more
	// dispatcher processes: one of them is killed.
	Handover *HandoverReport `json:"handover,omitempty"`
}

// RawOp is one raw JetStream operation measured on the setup's server.
type RawOp struct {
	Name string `json:"name"`
	// Concurrency is how many goroutines issued it at once.
	Concurrency int     `json:"concurrency"`
	N           int     `json:"n"`
	PerSec      float64 `json:"per_sec"`
	P50us       float64 `json:"p50_us,omitempty"`
	P99us       float64 `json:"p99_us,omitempty"`
}

// ScenarioReport is one scenario's figures on one setup.
type ScenarioReport struct {
	Scenario Scenario `json:"scenario"`
	// Runs is how many runs the saturation phase completed.
	Runs       int     `json:"runs"`
	RunsPerSec float64 `json:"runs_per_sec"`
	// Serial is start-to-done latency one run at a time; Saturated with
	// Window runs in flight.
	Serial    Latency `json:"serial"`
	Saturated Latency `json:"saturated"`
	Window    int     `json:"window"`
	// CPUPerRunMS is the CPU time of every process per run; CPUByRole
	// splits it (in Single mode the bench process is everything).
	CPUPerRunMS float64            `json:"cpu_per_run_ms"`
	CPUByRole   map[string]float64 `json:"cpu_by_role_ms"`
	// CPUBoundRunsPerSec is what CPUPerRunMS allows if every core of the
	// machine were the bench's: the rate without the neighbours' load
	// (an estimate; it assumes the runs are CPU-bound).
	CPUBoundRunsPerSec float64 `json:"cpu_bound_runs_per_sec"`
	// PeakRSSMB is the dispatcher's peak resident set during the phase;
	// in Single mode the whole process's (RSSOf says which).
	PeakRSSMB float64 `json:"peak_rss_mb"`
	RSSOf     string  `json:"rss_of"`
	// OtherCores is the CPU other programs on the machine used during
	// the phase, in cores: the noise the figures carry.
	OtherCores float64 `json:"other_cores"`
	Ops        Ops     `json:"ops_per_run"`
	// Conflicts and Redeliveries are the dispatchers' lost
	// compare-and-swaps and redelivered inputs, per run.
	Conflicts    float64       `json:"cas_conflicts_per_run"`
	Redeliveries float64       `json:"redeliveries_per_run"`
	Bound        Bound         `json:"bound"`
	Parked       *ParkedReport `json:"parked,omitempty"`
	Timers       *TimersReport `json:"timers,omitempty"`
	// Console is the console-index scenario's; it runs no runs, and the
	// fields above are zero.
	Console *ConsoleReport `json:"console,omitempty"`
	// Payload is the large-payload scenario's; the fields above but Runs
	// are zero.
	Payload *PayloadReport `json:"payload,omitempty"`
}

// Ops are the durable operations and stored bytes of one run, counted on
// the server.
type Ops struct {
	InputPublishes float64 `json:"input_publishes"`
	TaskPublishes  float64 `json:"task_publishes"`
	KVCreates      float64 `json:"kv_creates"`
	KVUpdates      float64 `json:"kv_updates"`
	// TimerPublishes are the timer stream's writes (attempt deadlines
	// armed and disarmed, timers, retention's due entries); IndexPublishes
	// the run index's (entries and heads).
	TimerPublishes float64 `json:"timer_publishes"`
	IndexPublishes float64 `json:"index_publishes"`
	// Dispatched and Served are deliveries to dispatchers and workers;
	// Indexed, record changes delivered to the dispatchers' indexers.
	Dispatched float64 `json:"dispatched"`
	Served     float64 `json:"served"`
	Indexed    float64 `json:"indexed"`
	// APIRequests are JetStream API requests (consumer and stream info,
	// purges; not publishes or deliveries).
	APIRequests float64 `json:"api_requests"`
	// DispatcherMsgs and WorkerMsgs are the NATS messages the dispatchers
	// and workers sent (publishes, KV reads and writes, acknowledgements,
	// pull and API requests): their round trips, durable or not.
	DispatcherMsgs float64 `json:"dispatcher_msgs"`
	WorkerMsgs     float64 `json:"worker_msgs"`
	// Bytes the run leaves stored in the run bucket and the streams.
	KVBytes    float64 `json:"kv_bytes"`
	InputBytes float64 `json:"input_bytes"`
	TaskBytes  float64 `json:"task_bytes"`
}

// Durable is the number of durable operations: publishes, KV writes and
// deliveries.
func (o Ops) Durable() float64 {
	return o.publishes() + o.KVCreates + o.KVUpdates + o.deliveries()
}

func (o Ops) publishes() float64 {
	return o.InputPublishes + o.TaskPublishes + o.TimerPublishes + o.IndexPublishes
}

func (o Ops) deliveries() float64 { return o.Dispatched + o.Served + o.Indexed }

// Bound is the best a scenario could do with the raw operations it needs.
type Bound struct {
	// RunsPerSec is 1 / Σ(count × cost) over the run's durable operations,
	// each costing the inverse of its raw rate at saturation.
	RunsPerSec float64 `json:"runs_per_sec"`
	// Ratio is the measured rate over RunsPerSec.
	Ratio float64 `json:"ratio"`
	// LatencyMS is the floor at concurrency 1: each delivery one raw
	// publish-consume hop, each KV write one raw write, in sequence.
	LatencyMS float64 `json:"latency_floor_ms"`
}

// ParkedReport is the parked scenario's own figures.
type ParkedReport struct {
	Runs int `json:"runs"`
	// ParkPerSec is how fast runs were started into the wait.
	ParkPerSec float64 `json:"park_per_sec"`
	// ResumePerSec is how fast they all ended once every event was sent.
	ResumePerSec float64 `json:"resume_per_sec"`
	// Resume is event-sent-to-done latency with every event in flight.
	Resume Latency `json:"resume"`
	// Storage per waiting run: run bucket and input stream bytes, and
	// the growth of the store directories on disk.
	KVBytesPerRun    float64 `json:"kv_bytes_per_run"`
	InputBytesPerRun float64 `json:"input_bytes_per_run"`
	DiskBytesPerRun  float64 `json:"disk_bytes_per_run"`
	// Memory of the dispatcher (in Single mode the process): before
	// parking, with every run parked, and the peak while parking.
	RSSBeforeMB  float64 `json:"rss_before_mb"`
	RSSParkedMB  float64 `json:"rss_parked_mb"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	HeapParkedMB float64 `json:"heap_parked_mb"`
	RSSOf        string  `json:"rss_of"`
}

// Target is one of the goals, met or not.
type Target struct {
	Name     string `json:"name"`
	Want     string `json:"want"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// Check reports what makes the report malformed: a scenario that did not
// run or has a missing figure. It checks completeness, not speed.
func (r *Report) Check() error {
	var errs []error
	if len(r.Setups) == 0 {
		errs = append(errs, errors.New("no setup was measured"))
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 }
	for _, s := range r.Setups {
		if len(s.Raw) == 0 {
			errs = append(errs, fmt.Errorf("%s: no raw JetStream figures", s.Setup))
		}
		for _, op := range s.Raw {
			if op.N <= 0 || bad(op.PerSec) {
				errs = append(errs, fmt.Errorf("%s: raw %s: n %d, %g/s", s.Setup, op.Name, op.N, op.PerSec))
			}
		}
		if len(s.Scenarios) == 0 {
			errs = append(errs, fmt.Errorf("%s: no scenario was measured", s.Setup))
		}
		for _, sc := range s.Scenarios {
			where := s.Setup + " " + string(sc.Scenario)
			if c := sc.Console; c != nil {
				if !c.Complete() {
					errs = append(errs, fmt.Errorf("%s: %d of %d runs indexed, %d on the pages%s", where, c.Indexed, c.Runs, c.WalkRuns, failures(c.Failures)))
				}
				if bad(c.IndexSeconds) || bad(c.StoreSeconds) || c.Walk.N == 0 {
					errs = append(errs, fmt.Errorf("%s: no timings (store %g s, index %g s, %d pages)", where, c.StoreSeconds, c.IndexSeconds, c.Walk.N))
				}
				continue
			}
			if p := sc.Payload; p != nil {
				if p.ByRef.Runs == 0 || p.Inline.Runs == 0 || bad(p.ByRef.MBPerSec) || bad(p.Inline.MBPerSec) {
					errs = append(errs, fmt.Errorf("%s: no throughput (%+v)", where, *p))
				}
				continue
			}
			figures := map[string]float64{
				"runs/s": sc.RunsPerSec, "bound runs/s": sc.Bound.RunsPerSec, "bound ratio": sc.Bound.Ratio,
				"latency floor": sc.Bound.LatencyMS, "saturated p50": sc.Saturated.P50,
				"durable ops": sc.Ops.Durable(), "KV bytes": sc.Ops.KVBytes + sc.Ops.InputBytes,
			}
			switch {
			case sc.Parked != nil:
				p := sc.Parked
				figures["parked/s"], figures["KV bytes per parked run"] = p.ParkPerSec, p.KVBytesPerRun
			case sc.Timers != nil:
				if t := sc.Timers; t.Left.N != t.Runs || t.Fired.N != t.Runs {
					errs = append(errs, fmt.Errorf("%s: lateness of %d and %d of %d runs", where, t.Left.N, t.Fired.N, t.Runs))
				}
			default:
				figures["serial p50"] = sc.Serial.P50
			}
			for name, v := range figures {
				if bad(v) {
					errs = append(errs, fmt.Errorf("%s: %s is %g", where, name, v))
				}
			}
			if sc.Runs <= 0 {
				errs = append(errs, fmt.Errorf("%s: no run completed", where))
			}
		}
	}
	return errors.Join(errs...)
}
