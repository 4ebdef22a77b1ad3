// Package console is jetflow's web console: an http.Handler serving a
// single page (plain JavaScript and CSS embedded in the binary, no
// network at run time) and the JSON endpoints it reads: runs (paged from
// an index the run bucket's KV watch keeps current), one run with its
// statechart and DAG drawn as SVG by package graph, its history replayed
// from the input stream, deployed workflows, and server-sent events that
// update open pages live, and bulk jobs with their progress. It is
// read-only unless Config.Actions is set, which allows acting on one run
// (event, cancel, pause, resume, terminate, redrive) and submitting and
// cancelling bulk jobs over a filter. It may authenticate its users
// (Config.Auth: a bearer token, basic auth or a trusted proxy's header)
// and writes every action to the audit log, which it shows too.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/graph"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
)

//go:embed assets
var assets embed.FS

// Config configures a Console.
type Config struct {
	// JS, Names, Runs and Registry reach the deployment. Required.
	JS       jetstream.JetStream
	Names    subjects.Names
	Runs     *kvstore.RunStore
	Registry *registry.Registry
	// Client sends the actions and reads bulk jobs; required when
	// Actions is set (without it the jobs pages answer 503).
	Client *client.Client
	// Actions allows the page to act on runs and submit bulk jobs.
	// Default false: read-only.
	Actions bool
	// Auth says who may use the console. Default: everyone, as
	// "anonymous".
	Auth Auth
	// Addr is the address the console is served on (host:port). With
	// Actions and without Auth, New refuses one that is not loopback.
	// Default "": not checked (the embedder serves it where it knows).
	Addr string
	// Base is the path the console is served under. Default "/console".
	Base string
	// NATSURL and Prefix are written into the jetflow commands the page
	// offers to copy ("" leaves the flag out). Default "".
	NATSURL, Prefix string
	// PageSize is the default number of runs per page (at most
	// MaxPageSize). Default 50.
	PageSize int
	// MaxHistory bounds the inputs read for one run's history; a longer
	// history is shown cut, without a replay check. Default 5000.
	MaxHistory int
	// Settings are the dispatchers' settings that shape run records,
	// which a replay must share to rebuild a record exactly (nil Tokens:
	// the deployment's secret). Default: the dispatchers' defaults.
	Settings step.Settings
	// RunOptions are the reducer options the dispatchers give
	// deployments without a policy. Default: none.
	RunOptions run.Options
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// MaxPageSize caps a page of runs.
const MaxPageSize = 500

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Base == "" {
		c.Base = "/console"
	}
	c.Base = "/" + strings.Trim(c.Base, "/")
	if c.PageSize <= 0 {
		c.PageSize = 50
	}
	c.PageSize = min(c.PageSize, MaxPageSize)
	if c.MaxHistory <= 0 {
		c.MaxHistory = 5000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Settings.Names = c.Names
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.JS == nil || c.Runs == nil || c.Registry == nil {
		errs = append(errs, errors.New("console: JS, Runs and Registry are required (fill them from a fleet: JS, Names, Runs, Registry, Client)"))
	}
	if c.Names == (subjects.Names{}) {
		errs = append(errs, errors.New("console: Names is required"))
	}
	if c.Actions && c.Client == nil {
		errs = append(errs, errors.New("console: Actions needs a Client to send its actions and submit bulk jobs"))
	}
	if c.Base == "/" {
		errs = append(errs, errors.New("console: Base must be a path below the root, such as /console"))
	}
	errs = append(errs, c.Auth.validate())
	errs = append(errs, CheckExposure(c.Addr, c.Actions, c.Auth))
	return errors.Join(errs...)
}

// Console serves the web console. Create it with New, call Start, and
// mount it under Config.Base.
type Console struct {
	cfg   Config
	log   *slog.Logger
	idx   *index
	mux   *http.ServeMux
	page  *template.Template
	login *template.Template
	// sessionKey signs the login form's session cookies.
	sessionKey []byte
	static     fs.FS
	defs       *definitions

	replayMu sync.Mutex
	replayer *replay.Stepper
	// checking holds the revision check under way (revcheck.go).
	checking chan struct{}

	mu          sync.Mutex
	watcher     jetstream.KeyWatcher
	cancelWatch context.CancelFunc
	done        chan struct{}
	closing     chan struct{}
	stopOnce    sync.Once
	servers     sync.Map // *http.Server → struct{}: shutdown hooks registered
}

// New checks cfg and returns a console; it serves once started.
func New(cfg Config) (*Console, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	page, err := template.ParseFS(static, "index.html")
	if err != nil {
		return nil, fmt.Errorf("console: page template: %w", err)
	}
	login, err := template.ParseFS(static, "login.html")
	if err != nil {
		return nil, fmt.Errorf("console: login template: %w", err)
	}
	c := &Console{
		cfg: cfg, log: cfg.Logger, idx: newIndex(), page: page, login: login, static: static,
		defs: newDefinitions(cfg.Registry), closing: make(chan struct{}), sessionKey: newSessionKey(),
		checking: make(chan struct{}, 1),
	}
	c.routes()
	return c, nil
}

// Start opens the watch that keeps the run index current and returns
// once it is open (ctx bounds that); the index fills and follows in the
// background until Stop, or until the NATS connection closes.
func (c *Console) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watcher != nil {
		return nil
	}
	// A watch's subscription ends with the context it was made with, so
	// it gets one of its own, ended by Stop.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := c.cfg.Runs.Watch(wctx)
	if err != nil {
		cancel()
		return fmt.Errorf("console: %w", err)
	}
	c.watcher, c.done, c.cancelWatch = w, make(chan struct{}), cancel
	go c.follow(w, c.done)
	return nil
}

func (c *Console) follow(w jetstream.KeyWatcher, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-c.closing:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return // the connection closed
			}
			c.idx.apply(e)
		}
	}
}

// ensureStarted starts the index at the first request to a console that
// was mounted without Start, so that a process that mounts it (every
// dispatcher's HTTP endpoint) pays for the index only once someone looks.
func (c *Console) ensureStarted() {
	c.mu.Lock()
	running := c.watcher != nil
	c.mu.Unlock()
	select {
	case <-c.closing:
		return
	default:
	}
	if !running {
		if err := c.Start(context.Background()); err != nil {
			c.log.Warn("console: cannot follow the run bucket", slog.Any("error", err))
		}
	}
}

// Stop ends the index's watch and every open event stream. It is safe to
// call more than once.
func (c *Console) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { close(c.closing) })
	c.mu.Lock()
	w, done, cancel := c.watcher, c.done, c.cancelWatch
	c.mu.Unlock()
	if w == nil {
		return nil
	}
	err := w.Stop()
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, nats.ErrBadSubscription) || errors.Is(err, nats.ErrConnectionClosed) {
		err = nil // the connection closed first, taking the watch with it
	}
	return err
}

// Loaded reports whether the index has read every run once.
func (c *Console) Loaded() bool { return c.idx.counts().Loaded }

// ServeHTTP serves the page, its assets and the API under Config.Base.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Run data is shown as text only; the policy is the second line of
	// defence: no inline script or style, no other origin.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !c.public(r) {
		who, why := c.authenticate(r)
		if who == "" {
			c.refuse(w, r, why)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, who))
	}
	c.ensureStarted()
	c.mux.ServeHTTP(w, r)
}

// public reports whether a request needs no identity: the login form and
// the static files (code and style, no data).
func (c *Console) public(r *http.Request) bool {
	p := r.URL.Path
	return p == c.cfg.Base+"/login" || strings.HasPrefix(p, c.cfg.Base+"/static/")
}

// Handler is the console as an http.Handler.
func (c *Console) Handler() http.Handler { return c }

// Mount registers the console on mux under Config.Base, and redirects
// the bare base path to it.
func (c *Console) Mount(mux *http.ServeMux) {
	mux.Handle(c.cfg.Base+"/", c)
	mux.Handle("GET "+c.cfg.Base, http.RedirectHandler(c.cfg.Base+"/", http.StatusFound))
}

func (c *Console) routes() {
	b := c.cfg.Base
	m := http.NewServeMux()
	// Pages: every path renders the same document; the script routes.
	for _, p := range []string{"/{$}", "/runs/{id}", "/workflows", "/workflows/{name}", "/jobs", "/jobs/{id}", "/audit", "/schedules"} {
		m.HandleFunc("GET "+b+p, c.servePage)
	}
	m.Handle("GET "+b+"/static/", http.StripPrefix(b+"/static/", http.HandlerFunc(c.serveStatic)))
	m.HandleFunc("GET "+b+"/api/overview", c.apiOverview)
	m.HandleFunc("GET "+b+"/api/runs", c.apiRuns)
	m.HandleFunc("GET "+b+"/api/runs/{id}", c.apiRun)
	m.HandleFunc("GET "+b+"/api/runs/{id}/dag", c.apiRunDAG)
	m.HandleFunc("GET "+b+"/api/runs/{id}/history", c.apiHistory)
	m.HandleFunc("GET "+b+"/login", c.serveLogin)
	m.HandleFunc("POST "+b+"/login", c.postLogin)
	m.HandleFunc("GET "+b+"/logout", c.logout)
	m.HandleFunc("GET "+b+"/api/audit", c.apiAudit)
	// Every action is audited (audit.go).
	m.HandleFunc("POST "+b+"/api/runs/{id}/event", c.audited("event", c.apiSendEvent))
	m.HandleFunc("POST "+b+"/api/runs/{id}/cancel", c.audited("cancel", c.apiCancel))
	m.HandleFunc("POST "+b+"/api/runs/{id}/pause", c.audited("pause", c.apiPause))
	m.HandleFunc("POST "+b+"/api/runs/{id}/resume", c.audited("resume", c.apiResume))
	m.HandleFunc("POST "+b+"/api/runs/{id}/terminate", c.audited("terminate", c.apiTerminate))
	m.HandleFunc("POST "+b+"/api/runs/{id}/redrive", c.audited("redrive", c.apiRedrive))
	m.HandleFunc("POST "+b+"/api/bulk/count", c.apiBulkCount)
	m.HandleFunc("GET "+b+"/api/jobs", c.apiJobs)
	m.HandleFunc("POST "+b+"/api/jobs", c.audited("jobs-create", c.apiSubmitJob))
	m.HandleFunc("GET "+b+"/api/jobs/events", c.apiJobEvents)
	m.HandleFunc("GET "+b+"/api/jobs/{id}", c.apiJob)
	m.HandleFunc("POST "+b+"/api/jobs/{id}/cancel", c.audited("jobs-cancel", c.apiCancelJob))
	m.HandleFunc("POST "+b+"/api/runs/{id}/reset", c.audited("reset", c.apiReset))
	m.HandleFunc("GET "+b+"/api/workflows", c.apiWorkflows)
	m.HandleFunc("GET "+b+"/api/workflows/{name}", c.apiWorkflow)
	m.HandleFunc("GET "+b+"/api/workflows/{name}/dag", c.apiWorkflowDAG)
	m.HandleFunc("GET "+b+"/api/workflows/{name}/check", c.apiCheckRevision)
	m.HandleFunc("GET "+b+"/api/events", c.apiEvents)
	m.HandleFunc("GET "+b+"/api/schedules", c.apiSchedules)
	m.HandleFunc(b+"/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no API endpoint %s %s", r.Method, r.URL.Path))
	})
	c.mux = m
}

// pageData is what the page template receives: configuration only,
// never run data.
type pageData struct {
	Base    string
	Actions bool
	// Who is the signed-in identity; "" without authentication.
	Who string
}

func (c *Console) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	d := pageData{Base: c.cfg.Base, Actions: c.cfg.Actions}
	if c.cfg.Auth.On() {
		d.Who = Identity(r.Context())
	}
	if err := c.page.Execute(w, d); err != nil {
		c.log.Warn("console: render page", slog.Any("error", err))
	}
}

func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	if name == "app.css" {
		// The diagrams' style comes from package graph, next to the SVG it
		// styles.
		data, err := fs.ReadFile(c.static, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(append(data, graph.Style...))
		return
	}
	if name == "index.html" || name == "login.html" || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, c.static, name)
}
