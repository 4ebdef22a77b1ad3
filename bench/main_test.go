package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
)

// agentEnv makes the test binary a bench agent: Processes and Cluster
// setups re-execute it instead of the jetflow command.
const agentEnv = "JETFLOW_BENCH_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		_, gogcSet := os.LookupEnv("GOGC")
		err := AgentMain(ctx, os.Args[1:], os.Stdin, os.Stdout, gogcSet)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

// agentConfig sets cfg up to start agents from this test binary.
func agentConfig(t *testing.T, cfg Config) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agent = []string{exe}
	cfg.AgentEnv = []string{agentEnv + "=1"}
	return cfg
}
