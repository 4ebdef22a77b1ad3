package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/console"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/token"
)

// defaultConsoleHTTP is where `jetflow console` listens.
const defaultConsoleHTTP = "127.0.0.1:7071"

// consoleSettings configure the web console, both the one serve and
// dispatcher mount under /console/ on their HTTP endpoint and the one
// the console verb serves alone.
type consoleSettings struct {
	Actions bool `env:"JETFLOW_CONSOLE_ACTIONS" flag:"console-actions"`

	flags *pflag.FlagSet
}

// mountedFlags are the flag sets addConsoleFlags declared the mounted
// console's flags on: every command is built, one runs.
var mountedFlags []*pflag.FlagSet

// mounted are the settings of the console serve and dispatcher mount;
// their commands declare its flags with addConsoleFlags.
var mounted consoleSettings

// addConsoleFlags declares the console's flags on a command that mounts
// it (serve, dispatcher).
func addConsoleFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	mountedFlags = append(mountedFlags, fs)
	fs.BoolVar(&mounted.Actions, "console-actions", false, "let the web console at /console/ act: events, cancel, pause, resume, terminate, redrive and bulk jobs; it is read-only without (env JETFLOW_CONSOLE_ACTIONS)")
}

// mountConsole adds the console under /console/ to the HTTP endpoint of
// serve and dispatcher, and sends / there. Its run index starts at the
// first request, so a dispatcher nobody browses pays nothing for it.
func mountConsole(f *fleet.Fleet, mux *http.ServeMux) {
	settings := mounted
	for _, fs := range mountedFlags {
		if fs.Changed("console-actions") {
			settings.flags = fs
		}
	}
	log := slog.Default()
	if err := applyEnv(settings.flags, &settings); err != nil {
		log.Error("console not mounted", slog.Any("error", err))
		return
	}
	c, err := console.New(consoleOf(f, console.Config{
		Actions:  settings.Actions,
		NATSURL:  redactURLs(f.URL()),
		Prefix:   f.Names.Prefix(),
		Logger:   log,
		Settings: step.Settings{Tokens: f.Tokens()},
	}))
	if err != nil {
		log.Error("console not mounted", slog.Any("error", err))
		return
	}
	c.Mount(mux)
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
}

func newConsole(s streams) *cobra.Command {
	var conn connConfig
	var tokens secretConfig
	var addr string
	settings := consoleSettings{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console for a jetflow deployment",
		Long: "console serves the web console (runs, their statecharts, DAGs and histories, and the\n" +
			"deployed workflows, updated live) for the deployment at --nats, on --http under\n" +
			"/console/. serve and dispatcher already serve it on their own HTTP endpoint; this verb\n" +
			"is for browsing a cluster from elsewhere. It is read-only unless --console-actions\n" +
			"is given, which lets the page send events to runs, cancel, pause, resume, terminate and\n" +
			"redrive them, and submit and cancel bulk jobs over a filter, each after a confirmation\n" +
			"showing the equivalent command (docs/CONSOLE.md).\n\n" +
			"It prints the console's URL (console: URL) and runs until Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), &settings); err != nil {
				return err
			}
			if err := conn.resolve(); err != nil {
				return err
			}
			signer, err := tokens.signer()
			if err != nil {
				return err
			}
			return runConsole(cmd.Context(), s, &conn, addr, settings, signer)
		},
	}
	addConnFlags(cmd, &conn)
	addSecretFlags(cmd, &tokens) // histories replay results, checking their tokens
	fs := cmd.Flags()
	settings.flags = fs
	fs.StringVar(&addr, "http", defaultConsoleHTTP, "address the console listens on; port -1 or 0 picks a free one (env JETFLOW_CONSOLE_HTTP)")
	fs.BoolVar(&settings.Actions, "console-actions", false, "let the page act on runs and submit bulk jobs (env JETFLOW_CONSOLE_ACTIONS)")
	return cmd
}

// consoleAddr reads the console verb's address from the environment when
// its flag was not given.
type consoleAddr struct {
	HTTP string `env:"JETFLOW_CONSOLE_HTTP" flag:"http"`
}

func runConsole(ctx context.Context, s streams, conn *connConfig, addr string, settings consoleSettings, signer *token.Signer) error {
	a := consoleAddr{HTTP: addr}
	if err := applyEnv(settings.flags, &a); err != nil {
		return err
	}
	ep, err := listenHTTP(a.HTTP)
	if err != nil {
		return err
	}
	log := verbLogger(s.err)
	f, err := conn.open(ctx, openOptions{Logger: log})
	if err != nil {
		_ = ep.ln.Close()
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = f.Stop(stopCtx)
	}()
	c, err := console.New(consoleOf(f, console.Config{
		Actions:  settings.Actions,
		NATSURL:  redactURLs(f.URL()),
		Prefix:   f.Names.Prefix(),
		Logger:   log,
		Settings: step.Settings{Tokens: signer},
	}))
	if err != nil {
		_ = ep.ln.Close()
		return err
	}
	if err := c.Start(ctx); err != nil {
		_ = ep.ln.Close()
		return err
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ep.ln) }()
	mode := "read-only"
	if settings.Actions {
		mode = "actions enabled"
	}
	fmt.Fprintf(s.out, "console: %s/console/ (%s)\n", ep.URL(), mode)

	select {
	case err = <-done:
	case <-ctx.Done():
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(c.Stop(stopCtx), srv.Shutdown(stopCtx))
		if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// consoleOf fills the connection fields of cfg from a running fleet.
func consoleOf(f *fleet.Fleet, cfg console.Config) console.Config {
	cfg.JS, cfg.Names, cfg.Runs, cfg.Registry, cfg.Client = f.JS, f.Names, f.Runs, f.Registry, f.Client
	return cfg
}
