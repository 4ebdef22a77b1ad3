package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/wire"
)

// Misbehaviours of the protocol worker (rawworker_test.go): what a worker
// written from docs/PROTOCOL.md can do wrong with an invocation. Each
// leaves its attempt without an accepted result, so the attempt must end
// at its deadline with TASK_TIMEOUT and be retried.
const (
	// misNak gives every delivery of the attempt back (-NAK) until the
	// consumer's max_deliver runs out.
	misNak = "nak"
	// misDrop acknowledges the invocation and never answers it.
	misDrop = "drop"
	// misEmpty answers with neither output nor error.
	misEmpty = "empty"
	// misNoMessage answers with an error that has no message.
	misNoMessage = "no-message"
)

// misKinds are the misbehaviours, in the order the report lists them.
var misKinds = []string{misNak, misDrop, misEmpty, misNoMessage}

// malformedResult reports whether a misbehaviour publishes a result.
func malformedResult(kind string) bool { return kind == misEmpty || kind == misNoMessage }

// harnessPolicy is the task policy every workflow of the harness is
// deployed with. Attempts time out after 4 s, so that the misbehaved ones
// end within a short run, and the tasks the protocol worker serves get
// six attempts with short backoffs, so that a misbehaved attempt costs a
// run little. fail keeps the defaults (three attempts from 1 s), which the
// catch workflow's two retries rely on; nobody is the stuck canary's task
// (stranded_test.go), whose one attempt must outlast the check. square is
// queued by priority and key (docs/POLICY.md#priority-and-fairness), so
// that its invocations go through the queue stream and a dispatcher's
// admission, which moves with the partitions when dispatchers die: its
// attempts get 15 s, since a queued attempt also waits out a failover of
// its admitter (three partition heartbeats and a view rebuild), which 4 s
// attempts did not always survive six times in a row.
const harnessPolicy = `{
	"*":      {"attemptTimeout": "4s", "maxAttempts": 6, "initialInterval": "100ms", "maxInterval": "1s"},
	"square": {"priority": 2, "priorityFrom": "$.input.n", "key": "$.input.n", "attemptTimeout": "15s"},
	"fail":   {"maxAttempts": 3, "initialInterval": "1s", "maxInterval": "1m"},
	"nobody": {"attemptTimeout": "30m", "maxAttempts": 1}
}`

// parsedPolicy is harnessPolicy parsed; a typo in it fails every test.
var parsedPolicy = func() *policy.Policy {
	p, err := policy.Parse([]byte(harnessPolicy))
	if err != nil {
		panic("chaos: harnessPolicy: " + err.Error())
	}
	return p
}()

// misbehaviour decides what the protocol worker does with an invocation:
// "" (serve it well) or one of misKinds. The choice is a hash of the seed
// and the attempt (run, activation, node, attempt), so every worker and
// every delivery of an attempt makes the same one, and a NAKed attempt is
// NAKed until NATS stops redelivering it. share of the attempts
// misbehave, never the last attempt the policy allows: a run then still
// ends as a fault-free run does, later.
type misbehaviour struct {
	seed  uint64
	share float64
}

func (m misbehaviour) decide(inv *wire.Invocation) string {
	if m.share <= 0 || inv.Attempt >= parsedPolicy.Retry(inv.Task, inv.Version).MaxAttempts {
		return ""
	}
	h := sha256.New()
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], m.seed)
	h.Write(seed[:])
	for _, s := range []string{inv.Run, inv.Activation, inv.Node, strconv.Itoa(inv.Attempt)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	u := float64(binary.BigEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
	if u >= m.share {
		return ""
	}
	return misKinds[int(u/m.share*float64(len(misKinds)))%len(misKinds)]
}

// workerLogs is what the workers' execution logs say they did.
type workerLogs struct {
	// runs are the handler executions of each attempt.
	runs       map[attemptKey][]execution
	executions int
	// mis is the misbehaviour of each attempt misbehaved on, byRun each
	// run's such attempts, and deliveries the deliveries misbehaved on
	// by kind (a NAKed attempt has up to max_deliver).
	mis        map[attemptKey]string
	byRun      map[string][]attemptKey
	deliveries map[string]int
}

// readWorkerLogs reads every worker's execution log in dir; on an error
// it returns what it read.
func readWorkerLogs(dir string) (*workerLogs, error) {
	execs, err := readExecutions(dir)
	l := &workerLogs{
		runs: map[attemptKey][]execution{}, mis: map[attemptKey]string{},
		byRun: map[string][]attemptKey{}, deliveries: map[string]int{},
	}
	for _, e := range execs {
		k := e.key()
		if e.Misbehave == "" {
			l.runs[k] = append(l.runs[k], e)
			l.executions++
			continue
		}
		l.deliveries[e.Misbehave]++
		if _, seen := l.mis[k]; !seen {
			l.byRun[e.Run] = append(l.byRun[e.Run], k)
		}
		l.mis[k] = e.Misbehave
	}
	return l, err
}

// naked are the attempts NAKed on every delivery.
func (l *workerLogs) naked() map[attemptKey]bool {
	out := map[attemptKey]bool{}
	for k, kind := range l.mis {
		if kind == misNak {
			out[k] = true
		}
	}
	return out
}

// attempts counts the attempts misbehaved on, by kind.
func (l *workerLogs) attempts() map[string]int {
	out := map[string]int{}
	for _, kind := range l.mis {
		out[kind]++
	}
	return out
}
