package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/caarlos0/env/v11"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// defaultNATSURL is where client verbs look for NATS when given no URL:
// the address `jetflow serve` listens on by default.
const defaultNATSURL = "nats://" + embedded.DefaultListen

// defaultTimeout bounds connecting and each request of a client verb.
const defaultTimeout = 10 * time.Second

// connConfig says how a verb reaches NATS. Every field is a flag and an
// environment variable; a flag given on the command line wins. Fields are
// final only after resolve (natsOptions and open call it).
type connConfig struct {
	URL      string        `env:"JETFLOW_NATS_URL" flag:"nats"`
	Creds    string        `env:"JETFLOW_NATS_CREDS" flag:"creds"`
	NKey     string        `env:"JETFLOW_NATS_NKEY" flag:"nkey"`
	User     string        `env:"JETFLOW_NATS_USER" flag:"user"`
	Password string        `env:"JETFLOW_NATS_PASSWORD" flag:"password"`
	TLSCA    string        `env:"JETFLOW_NATS_TLS_CA" flag:"tls-ca"`
	TLSCert  string        `env:"JETFLOW_NATS_TLS_CERT" flag:"tls-cert"`
	TLSKey   string        `env:"JETFLOW_NATS_TLS_KEY" flag:"tls-key"`
	Inbox    string        `env:"JETFLOW_INBOX_PREFIX" flag:"inbox-prefix"`
	Prefix   string        `env:"JETFLOW_PREFIX" flag:"prefix"`
	Timeout  time.Duration `env:"JETFLOW_TIMEOUT" flag:"timeout"`
	// PayloadThreshold: a body larger than this travels by reference
	// through the payload bucket (docs/PROTOCOL.md 2.4).
	PayloadThreshold int `env:"JETFLOW_PAYLOAD_THRESHOLD" flag:"payload-threshold"`

	flags    *pflag.FlagSet
	resolved bool
	err      error
	refused  *refusals // set by natsOptions
}

// refusals keeps the first subject permission the server refused this
// client, so that a failure can say why.
type refusals struct {
	mu    sync.Mutex
	first string
}

func (r *refusals) note(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == "" {
		r.first = err.Error()
	}
}

func (r *refusals) String() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// addConnFlags declares the connection flags on cmd and binds them to c.
func addConnFlags(cmd *cobra.Command, c *connConfig) {
	fs := cmd.Flags()
	c.flags = fs
	fs.StringVar(&c.URL, "nats", "", "NATS server URL(s), comma-separated; default "+defaultNATSURL+", where jetflow serve listens (env JETFLOW_NATS_URL)")
	fs.StringVar(&c.Creds, "creds", "", "NATS user credentials file, JWT and seed (env JETFLOW_NATS_CREDS)")
	fs.StringVar(&c.NKey, "nkey", "", "NATS nkey seed file (env JETFLOW_NATS_NKEY)")
	fs.StringVar(&c.User, "user", "", "NATS user name (env JETFLOW_NATS_USER)")
	fs.StringVar(&c.Password, "password", "", "NATS password; prefer the env var, flags show in ps (env JETFLOW_NATS_PASSWORD)")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "PEM file of CAs that sign the NATS server's certificate (env JETFLOW_NATS_TLS_CA)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM client certificate for NATS, with --tls-key (env JETFLOW_NATS_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert (env JETFLOW_NATS_TLS_KEY)")
	fs.StringVar(&c.Inbox, "inbox-prefix", "", "subject prefix of this client's reply inboxes instead of _INBOX, e.g. _INBOX_<user> for a NATS user allowed to subscribe only there (docs/SECURITY.md; env JETFLOW_INBOX_PREFIX)")
	fs.StringVar(&c.Prefix, "prefix", subjects.DefaultPrefix, "names the deployment's subjects, streams and buckets (env JETFLOW_PREFIX)")
	fs.DurationVar(&c.Timeout, "timeout", defaultTimeout, "bounds connecting to NATS and each request (env JETFLOW_TIMEOUT)")
	fs.IntVar(&c.PayloadThreshold, "payload-threshold", payload.DefaultThreshold, "bytes: a run input, event, invocation, task result or run record larger than this is stored in the Object Store bucket <prefix>_payloads and travels by reference (docs/PROTOCOL.md 2.4); keep it below the server's max_payload (env JETFLOW_PAYLOAD_THRESHOLD)")
}

// resolve applies the environment to the fields whose flag was not given
// and checks the result. It runs once; later calls return the same error.
func (c *connConfig) resolve() error {
	if c.resolved {
		return c.err
	}
	c.resolved = true
	if c.err = applyEnv(c.flags, c); c.err != nil {
		return c.err
	}
	c.err = c.check()
	return c.err
}

func (c *connConfig) check() error {
	var errs []error
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout (JETFLOW_TIMEOUT) must be positive, got %s", c.Timeout))
	}
	if _, err := subjects.New(c.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("--prefix (JETFLOW_PREFIX): %w", err))
	}
	auth := 0
	for _, s := range []string{c.Creds, c.NKey, c.User} {
		if s != "" {
			auth++
		}
	}
	if auth > 1 {
		errs = append(errs, errors.New("--creds, --nkey and --user (JETFLOW_NATS_CREDS, JETFLOW_NATS_NKEY, JETFLOW_NATS_USER) are alternatives: give one"))
	}
	if c.Password != "" && c.User == "" {
		errs = append(errs, errors.New("--password (JETFLOW_NATS_PASSWORD) needs --user (JETFLOW_NATS_USER)"))
	}
	if c.Inbox != "" {
		if err := checkInboxPrefix(c.Inbox); err != nil {
			errs = append(errs, fmt.Errorf("--inbox-prefix (JETFLOW_INBOX_PREFIX) %q: %w", c.Inbox, err))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key (JETFLOW_NATS_TLS_CERT, JETFLOW_NATS_TLS_KEY) go together: give both or neither"))
	}
	files := []struct{ path, flag, env string }{
		{c.Creds, "creds", "JETFLOW_NATS_CREDS"},
		{c.NKey, "nkey", "JETFLOW_NATS_NKEY"},
		{c.TLSCA, "tls-ca", "JETFLOW_NATS_TLS_CA"},
		{c.TLSCert, "tls-cert", "JETFLOW_NATS_TLS_CERT"},
		{c.TLSKey, "tls-key", "JETFLOW_NATS_TLS_KEY"},
	}
	for _, f := range files {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("--%s (%s): %w", f.flag, f.env, err))
		}
	}
	return errors.Join(errs...)
}

// natsOptions are the client options for the credentials and TLS files.
func (c *connConfig) natsOptions() ([]nats.Option, error) {
	if err := c.resolve(); err != nil {
		return nil, err
	}
	c.refused = &refusals{}
	opts := []nats.Option{nats.Timeout(c.Timeout), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			c.refused.note(err)
		}
	})}
	switch {
	case c.Creds != "":
		opts = append(opts, nats.UserCredentials(c.Creds))
	case c.NKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nkey (JETFLOW_NATS_NKEY) %s: %w", c.NKey, err)
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	if c.Inbox != "" {
		// Replies of requests, pulls and JetStream acks all come here.
		opts = append(opts, nats.CustomInboxPrefix(c.Inbox))
	}
	return opts, nil
}

// checkInboxPrefix accepts a literal subject prefix: dot-separated
// tokens, none empty, without wildcards, white space or control bytes.
// The client appends ".<unique>" to it for each inbox.
func checkInboxPrefix(p string) error {
	for i, tok := range strings.Split(p, ".") {
		if tok == "" {
			return fmt.Errorf("token %d is empty (no leading, trailing or double dots)", i+1)
		}
		for _, r := range tok {
			switch {
			case r == '*' || r == '>':
				return fmt.Errorf("it has the wildcard %q; a prefix must be a literal subject", r)
			case r <= ' ' || r == 0x7f || unicode.IsSpace(r):
				return errors.New("it has white space or a control character")
			}
		}
	}
	return nil
}

// openOptions says what a verb needs from its fleet.
type openOptions struct {
	// Embedded, when set and no URL is configured, starts an embedded
	// server (serve). Without it an empty URL means defaultNATSURL.
	Embedded *embedded.Config
	// Provision creates or updates streams and buckets (serve,
	// dispatcher); client verbs leave them as they are.
	Provision bool
	// ProvisionOptions apply when Provision is set.
	ProvisionOptions provision.ProvisionOptions
	// MigrateInputs migrates an input stream made by an older jetflow.
	MigrateInputs bool
	// MigrateParts partitions an unpartitioned input stream.
	MigrateParts bool
	// Dispatcher starts a dispatcher when set.
	Dispatcher *dispatcher.Config
	// TaskPolicy is applied to the task consumers a deploy creates.
	// Default the zero value (worker's defaults).
	TaskPolicy provision.TaskPolicy
	// Registerer receives the metrics. Default nil.
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// open connects to NATS (or starts the embedded server when the verb
// allows it and no URL is configured) and returns the running fleet.
// Client verbs get a fleet without a dispatcher that provisions nothing.
func (c *connConfig) open(ctx context.Context, opts openOptions) (*fleet.Fleet, error) {
	nopts, err := c.natsOptions()
	if err != nil {
		return nil, err
	}
	cfg := fleet.Config{
		URL:              c.URL,
		NATSOptions:      nopts,
		Prefix:           c.Prefix,
		Provision:        opts.ProvisionOptions,
		SkipProvision:    !opts.Provision,
		MigrateInputs:    opts.MigrateInputs,
		MigrateParts:     opts.MigrateParts,
		Dispatcher:       opts.Dispatcher,
		PayloadThreshold: c.PayloadThreshold,
		TaskPolicy:       opts.TaskPolicy,
		Registerer:       opts.Registerer,
		Logger:           opts.Logger,
	}
	if cfg.URL == "" {
		if opts.Embedded != nil {
			cfg.Embedded = *opts.Embedded
		} else {
			cfg.URL = defaultNATSURL
		}
	}
	if !opts.Provision {
		// A client verb should fail fast rather than hang on a missing server.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	f, err := fleet.Start(ctx, cfg)
	if err != nil {
		hint := ""
		switch {
		case cfg.URL == "":
		case errors.Is(err, nats.ErrNoServers):
			hint = " (is `jetflow serve` running there? set --nats or JETFLOW_NATS_URL)"
		case errors.Is(err, kvstore.ErrNotProvisioned):
			hint = fmt.Sprintf(" (nothing provisioned with prefix %q: start `jetflow serve` or `jetflow dispatcher` first, or check --prefix)", c.Prefix)
		case c.Inbox == "" && strings.Contains(c.refused.String(), `"_INBOX.`):
			hint = fmt.Sprintf(" (the server refused this client its reply inboxes, %s: a NATS user allowed only its own needs --inbox-prefix or JETFLOW_INBOX_PREFIX, e.g. _INBOX_<user>, docs/SECURITY.md)", c.refused)
		case c.refused.String() != "":
			hint = fmt.Sprintf(" (the server refused: %s)", c.refused)
		}
		return nil, fmt.Errorf("%w%s", err, hint)
	}
	return f, nil
}

// applyEnv sets each field of cfg (a pointer to a struct whose fields have
// env and flag tags) from its environment variable, unless its flag was
// given. A value that does not parse is reported by variable and flag.
func applyEnv(fs *pflag.FlagSet, cfg any) error {
	t := reflect.TypeOf(cfg).Elem()
	type binding struct{ key, flag string }
	byField := map[string]binding{}
	environ := map[string]string{}
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("env"), ",")
		if key == "" {
			continue
		}
		flag := sf.Tag.Get("flag")
		byField[sf.Name] = binding{key, flag}
		if fs != nil && flag != "" && fs.Changed(flag) {
			continue
		}
		if v, ok := os.LookupEnv(key); ok {
			environ[key] = v
		}
	}
	err := env.ParseWithOptions(cfg, env.Options{Environment: environ})
	if err == nil {
		return nil
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			b := byField[pe.Name]
			errs = append(errs, fmt.Errorf("environment variable %s=%q: %w (the --%s flag overrides it)", b.key, environ[b.key], pe.Err, b.flag))
			continue
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}
