// Command jetflow runs jaren-workflow 0.2 documents on NATS JetStream: an
// embedded server for one machine, or a fleet of dispatchers and workers
// on a NATS cluster. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/jetflow/jetflow/cmd/jetflow/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
