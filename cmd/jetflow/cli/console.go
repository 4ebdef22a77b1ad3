package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
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
	Actions        bool   `env:"JETFLOW_CONSOLE_ACTIONS" flag:"console-actions"`
	Token          string `env:"JETFLOW_CONSOLE_TOKEN" flag:"console-token"`
	Basic          string `env:"JETFLOW_CONSOLE_BASIC" flag:"console-basic"`
	ForwardHeader  string `env:"JETFLOW_CONSOLE_FORWARD_AUTH_HEADER" flag:"console-forward-auth-header"`
	TrustedProxies string `env:"JETFLOW_CONSOLE_TRUSTED_PROXIES" flag:"console-trusted-proxies"`

	flags *pflag.FlagSet
	// addr is where the mounted console is served (serve's --http).
	addr string
}

// consoleFlagNames are the console's flags, which addConsoleAuthFlags
// declares beside --console-actions.
var consoleFlagNames = []string{"console-actions", "console-token", "console-basic", "console-forward-auth-header", "console-trusted-proxies"}

// addConsoleAuthFlags declares the console's authentication flags.
func addConsoleAuthFlags(fs *pflag.FlagSet, s *consoleSettings) {
	fs.StringVar(&s.Token, "console-token", "", "the console asks for this bearer token (Authorization: Bearer, or its login form); at least 16 characters; prefer the env var, flags show in ps (env JETFLOW_CONSOLE_TOKEN)")
	fs.StringVar(&s.Basic, "console-basic", "", "the console asks for this basic-auth user, USER:BCRYPT-HASH (htpasswd -nbB USER PASSWORD) or USER:PASSWORD in plain text (env JETFLOW_CONSOLE_BASIC)")
	fs.StringVar(&s.ForwardHeader, "console-forward-auth-header", "", "the console takes the user from this header, e.g. X-Forwarded-User, set by an authenticating proxy; only from --console-trusted-proxies (env JETFLOW_CONSOLE_FORWARD_AUTH_HEADER)")
	fs.StringVar(&s.TrustedProxies, "console-trusted-proxies", "", "CIDRs or addresses, comma-separated, of the proxies whose --console-forward-auth-header is believed (env JETFLOW_CONSOLE_TRUSTED_PROXIES)")
}

// resolve applies the environment and builds the console's Auth; it
// refuses actions on an address others can reach without one.
func (s *consoleSettings) resolve() (console.Auth, error) {
	if err := applyEnv(s.flags, s); err != nil {
		return console.Auth{}, err
	}
	a := console.Auth{Token: s.Token, ForwardHeader: s.ForwardHeader}
	if s.Basic != "" {
		b, err := console.ParseBasic(s.Basic)
		if err != nil {
			return a, fmt.Errorf("--console-basic (JETFLOW_CONSOLE_BASIC): %w", err)
		}
		a.Basic = b
	}
	if s.TrustedProxies != "" {
		ps, err := console.ParseTrustedProxies(s.TrustedProxies)
		if err != nil {
			return a, fmt.Errorf("--console-trusted-proxies (JETFLOW_CONSOLE_TRUSTED_PROXIES): %w", err)
		}
		a.TrustedProxies = ps
	}
	return a, console.CheckExposure(s.addr, s.Actions, a)
}

// authMode says how the console authenticates, for its start line.
func authMode(a console.Auth) string {
	var m []string
	if a.Token != "" {
		m = append(m, "token")
	}
	if a.Basic != nil {
		m = append(m, "basic")
	}
	if a.ForwardHeader != "" {
		m = append(m, "forward-auth "+a.ForwardHeader)
	}
	return strings.Join(m, ", ") + " authentication"
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
	fs.BoolVar(&mounted.Actions, "console-actions", false, "let the web console at /console/ act: events, cancel, pause, resume, terminate, redrive and bulk jobs; it is read-only without; on an --http address other than loopback it needs a --console-token, --console-basic or --console-forward-auth-header (env JETFLOW_CONSOLE_ACTIONS)")
	addConsoleAuthFlags(fs, &mounted)
}

// mountedSettings are the mounted console's settings, from the command
// that runs (the one whose console flags were given) and the environment.
func mountedSettings(addr string) (consoleSettings, console.Auth, error) {
	settings := mounted
	settings.addr = addr
	for _, fs := range mountedFlags {
		for _, name := range consoleFlagNames {
			if fs.Changed(name) {
				settings.flags = fs
			}
		}
	}
	a, err := settings.resolve()
	return settings, a, err
}

// mountConsole adds the console under /console/ to the HTTP endpoint of
// serve and dispatcher, and sends / there. Its run index starts at the
// first request, so a dispatcher nobody browses pays nothing for it.
func mountConsole(f *fleet.Fleet, mux *http.ServeMux) {
	log := slog.Default()
	// runService checked these before starting.
	settings, auth, err := mountedSettings(mounted.addr)
	if err != nil {
		log.Error("console not mounted", slog.Any("error", err))
		return
	}
	c, err := console.New(consoleOf(f, console.Config{
		Actions:  settings.Actions,
		Auth:     auth,
		Addr:     settings.addr,
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
			"showing the equivalent command (docs/CONSOLE.md). Every action is written to the audit\n" +
			"log (`jetflow audit`, and the console's Audit page).\n\n" +
			"It serves anyone who reaches --http unless given --console-token, --console-basic or\n" +
			"--console-forward-auth-header with --console-trusted-proxies (docs/CONSOLE.md#authentication);\n" +
			"with --console-actions on an address other than loopback it refuses to start without one.\n\n" +
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
	fs.BoolVar(&settings.Actions, "console-actions", false, "let the page act on runs and submit bulk jobs; on an --http address other than loopback it needs authentication (env JETFLOW_CONSOLE_ACTIONS)")
	addConsoleAuthFlags(fs, &settings)
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
	settings.addr = a.HTTP
	auth, err := settings.resolve()
	if err != nil {
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
		Auth:     auth,
		Addr:     ep.ln.Addr().String(),
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
	if auth.On() {
		mode += ", " + authMode(auth)
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
