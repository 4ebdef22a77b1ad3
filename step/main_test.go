package step

import (
	"flag"
	"os"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
)

// TestMain checks every state the tests step through against
// encoding/json's encoding of it (run.VerifyEncoding), unless benchmarks
// run, which measure Encode alone.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		run.VerifyEncoding()
	}
	os.Exit(m.Run())
}
