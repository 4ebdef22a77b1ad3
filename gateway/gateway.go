// Package gateway is jetflow's HTTP/JSON gateway, for programs that have
// no NATS client: it starts runs (and waits for their result within a
// deadline), sends events, cancels, reads and lists runs, and lends task
// invocations to workers that long-poll for them. Every request carries a
// bearer token whose grant is one of the roles of docs/SECURITY.md;
// docs/GATEWAY.md describes every endpoint.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
)

// Prefix is the path every endpoint of the gateway lies under.
const Prefix = "/api/v1/"

// Config configures a Gateway.
type Config struct {
	// JS is the connection the gateway publishes and pulls with. Required.
	JS jetstream.JetStream
	// Names builds every subject. Default: subjects.Must("").
	Names subjects.Names
	// Client starts runs and reads them. Required.
	Client *client.Client
	// Registry, when set, lets a start naming a workflow (or revision)
	// that is not deployed be refused at once with 404; without it such a
	// start is accepted and the dispatchers drop it. Default nil.
	Registry *registry.Registry
	// Grants are the bearer tokens and their roles. Required.
	Grants []Grant
	// MaxWait caps how long a request may wait: a start or result wait
	// (?wait=) and a worker's take (?wait=). Default 5m.
	MaxWait time.Duration
	// TakeWait is how long a take waits for an invocation when the
	// request does not say. Default 20s.
	TakeWait time.Duration
	// MaxBody caps a request body. Default 0: the server's max payload.
	MaxBody int64
	// Secret gives a webhook trigger's HMAC secret from the name of the
	// environment variable its trigger file names (the command reads the
	// environment; this package does not). Default nil: webhooks answer
	// HOOK_UNCONFIGURED.
	Secret func(variable string) string
	// Logger receives what the gateway refuses and fails. Default
	// slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.Must("")
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 5 * time.Minute
	}
	if c.TakeWait <= 0 {
		c.TakeWait = 20 * time.Second
	}
	c.TakeWait = min(c.TakeWait, c.MaxWait)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.JS == nil:
		return errors.New("gateway: Config.JS is nil")
	case c.Client == nil:
		return errors.New("gateway: Config.Client is nil")
	case len(c.Grants) == 0:
		return errors.New("gateway: no grants: the gateway answers bearer tokens only (Config.Grants)")
	}
	return nil
}

// Gateway answers the HTTP API. It holds no state of its own beyond a
// cache of task consumers: any number of gateways may serve the same
// deployment, and a lease taken from one may be completed at another.
type Gateway struct {
	cfg    Config
	js     jetstream.JetStream
	names  subjects.Names
	client *client.Client
	grants []keyed
	log    *slog.Logger

	mu        sync.Mutex
	consumers map[string]jetstream.Consumer
}

// New returns a gateway; Mount puts it on a mux.
func New(cfg Config) (*Gateway, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Gateway{
		cfg: cfg, js: cfg.JS, names: cfg.Names, client: cfg.Client,
		grants: keyGrants(cfg.Grants), log: cfg.Logger,
		consumers: map[string]jetstream.Consumer{},
	}, nil
}

// Mount adds every endpoint under Prefix to mux.
func (g *Gateway) Mount(mux *http.ServeMux) {
	mux.HandleFunc("POST "+Prefix+"runs", g.start)
	mux.HandleFunc("GET "+Prefix+"runs", g.list)
	mux.HandleFunc("GET "+Prefix+"runs/{run}", g.status)
	mux.HandleFunc("GET "+Prefix+"runs/{run}/result", g.result)
	mux.HandleFunc("POST "+Prefix+"runs/{run}/events/{type}", g.event)
	mux.HandleFunc("POST "+Prefix+"runs/{run}/cancel", g.cancel)
	mux.HandleFunc("POST "+Prefix+"tasks/{task}/{version}/take", g.take)
	mux.HandleFunc("POST "+Prefix+"leases/{lease}/heartbeat", g.heartbeat)
	mux.HandleFunc("POST "+Prefix+"leases/{lease}/complete", g.complete)
	mux.HandleFunc("POST "+Prefix+"hooks/{name}", g.hook)
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf("no endpoint %s %s (docs/GATEWAY.md lists them)", r.Method, r.URL.Path), Pointer: "path"})
	})
}

// Error codes of the gateway's error answers.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"  // 401: no token, or not a known one
	CodeForbidden       = "FORBIDDEN"        // 403: the token's role may not do this
	CodeInvalid         = "INVALID"          // 400: a field, parameter or body is wrong; Pointer names it
	CodeNotFound        = "NOT_FOUND"        // 404: no such endpoint
	CodeRunNotFound     = "RUN_NOT_FOUND"    // 404: the run has no record
	CodeRunRemoved      = "RUN_REMOVED"      // 410: retention removed the run
	CodeWorkflowUnknown = "WORKFLOW_UNKNOWN" // 404: the workflow or revision is not deployed
	CodeTaskUnknown     = "TASK_UNKNOWN"     // 404: no consumer for the task version (not deployed)
	CodeTooLarge        = "TOO_LARGE"        // 413: the body exceeds the server's max payload
	CodeNotSettled      = "NOT_SETTLED"      // 504: the run did not settle within the wait; Run names it
	CodeUnavailable     = "UNAVAILABLE"      // 503: NATS did not answer; retry
)

// Error is the body of every error answer, as {"error": Error}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Pointer names what is wrong: a JSON Pointer into the request body
	// ("/input"), "query:NAME" for a query parameter, "path:NAME" for a
	// path segment, "header:NAME" for a header.
	Pointer string `json:"pointer,omitempty"`
	// Run is the run the answer concerns, when there is one.
	Run string `json:"run,omitempty"`
	// Detail is the run's status when the answer is NOT_SETTLED.
	Detail any `json:"status,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jetflow"`)
	}
	writeJSON(w, e.Status, map[string]*Error{"error": e})
}

// natsError answers a failure of NATS: a timeout or cancellation is
// UNAVAILABLE, as is anything else the request did not cause.
func (g *Gateway) natsError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, client.ErrTooLarge) {
		writeError(w, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: err.Error(), Pointer: "/"})
		return
	}
	g.log.Warn("gateway: "+what+" failed", slog.String("path", r.URL.Path), slog.Any("error", err))
	writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: what + ": " + err.Error()})
}

// maxBody is the largest body a request may carry.
func (g *Gateway) maxBody() int64 {
	if g.cfg.MaxBody > 0 {
		return g.cfg.MaxBody
	}
	if mp := g.js.Conn().MaxPayload(); mp > 0 {
		return mp
	}
	return 1 << 20
}

// waitParam reads a duration query parameter, capped by MaxWait.
func (g *Gateway) waitParam(r *http.Request, name string, def time.Duration) (time.Duration, *Error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: fmt.Sprintf("%s=%q is not a duration such as 30s", name, s), Pointer: "query:" + name}
	}
	if d > g.cfg.MaxWait {
		return 0, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: fmt.Sprintf("%s=%s is longer than the gateway's longest wait, %s", name, d, g.cfg.MaxWait), Pointer: "query:" + name}
	}
	return d, nil
}

// context bounds a NATS call of a request.
func opContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Second)
}
