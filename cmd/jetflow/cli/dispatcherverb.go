package cli

import (
	"os"

	"github.com/spf13/cobra"
)

// gcHelp tells serve and dispatcher users about dispatcher.TuneGC.
const gcHelp = "Memory: unless GOGC is set, the Go collector lets the heap grow 64 MB past its live part\n" +
	"between collections (GOGC up to 400 while the heap is small), which saves a dispatcher about\n" +
	"a fifth of its CPU for at most 64 MB; GOGC=100 restores Go's default, and GOMEMLIMIT bounds\n" +
	"the heap either way."

// gogcSet reports whether the GOGC environment variable is set, to
// anything (even empty), which turns dispatcher.TuneGC off.
func gogcSet() bool {
	_, set := os.LookupEnv("GOGC")
	return set
}

func newDispatcher(s streams) *cobra.Command {
	var (
		conn connConfig
		svc  serviceConfig
	)
	cmd := &cobra.Command{
		Use:   "dispatcher",
		Short: "Run a dispatcher alone against an existing NATS deployment",
		Long: "dispatcher consumes run inputs from the deployment at --nats (default " + defaultNATSURL + ",\n" +
			"where `jetflow serve` listens) and drives the runs, with the same HTTP endpoint as serve\n" +
			"(/healthz, /readyz, /metrics). Run as many as you like: they share one durable consumer.\n\n" +
			"It expects the streams and buckets to exist (a serve created them); --provision creates\n" +
			"or updates them with --replicas and --history-max-age instead.\n\n" +
			"Ctrl-C (or SIGTERM) finishes the steps in flight (bounded by --drain-timeout) and exits 0.\n" +
			"Every flag has an environment variable (named in its help); a flag given wins.\n\n" +
			"Tracing (off by default): OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER=otlp\n" +
			"exports one OpenTelemetry trace per run over OTLP/HTTP (docs/OBSERVABILITY.md).\n\n" +
			gcHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runService(cmd.Context(), s, "dispatcher", &conn, &svc, nil)
		},
	}
	addConnFlags(cmd, &conn)
	svc.addFlags(cmd)
	addConsoleFlags(cmd) // the console mounted on the HTTP endpoint (console.go)
	addGatewayFlags(cmd) // the HTTP/JSON gateway mounted there too (gateway.go)
	cmd.Flags().BoolVar(&svc.Provision, "provision", false, "create or update the streams and buckets at start (env JETFLOW_PROVISION)")
	return cmd
}
