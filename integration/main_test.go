package integration

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runindex"
)

// TestMain runs the tests, or, when re-executed by a crash test with
// roleEnv set, a dispatcher process (proc_test.go).
func TestMain(m *testing.M) {
	runindex.VerifyBuild()
	if os.Getenv(roleEnv) == roleDispatcher {
		os.Exit(dispatcherProcess())
	}
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}
