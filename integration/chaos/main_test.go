package chaos

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// A re-executed test binary reads its role from roleEnv: a NATS node or a
// worker (node_test.go, worker_test.go). Dispatchers are the real jetflow
// command, built by the test.
const (
	roleEnv    = "JETFLOW_CHAOS_ROLE"
	roleNATS   = "nats"
	roleWorker = "worker"
)

var (
	flagDuration = flag.Duration("duration", 0,
		"length of the chaos phase; 0 runs the short mode (about 50s of chaos, under 3 minutes in all)")
	flagRate = flag.Float64("rate", 0,
		"runs started per second; 0 picks the mode's default")
	flagSeed = flag.Int64("seed", 0,
		"seed of every random choice (workflow mix, fault kinds and moments); 0 picks one from the clock")
	flagPartitions = flag.String("partitions", "auto",
		"auto: cut NATS nodes off from each other when network namespaces work here; on: require it; off: never")
	flagMisbehave = flag.Float64("misbehave", 0.15,
		"share of the attempts of the protocol worker's tasks that it misbehaves on (NAK, drop, malformed result); never a task's last attempt")
	flagRaceBinary = flag.Bool("race-dispatcher", raceEnabled,
		"build the jetflow command for the dispatchers with -race (default: as this test binary)")
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case roleNATS:
		os.Exit(natsNode())
	case roleWorker:
		os.Exit(workerProcess())
	}
	goleak.VerifyTestMain(m)
}
