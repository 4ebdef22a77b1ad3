package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jetflow/jetflow/fleet"
)

// defaultHTTP is the health and metrics address of serve and dispatcher.
const defaultHTTP = "127.0.0.1:7070"

// httpMounts add handlers to the HTTP endpoint of serve and dispatcher:
// the console (console.go) and the gateway (gateway.go). Each is called once with the running fleet,
// before the endpoint answers. Patterns must not clash with /healthz,
// /readyz and /metrics.
var httpMounts = []func(f *fleet.Fleet, mux *http.ServeMux){mountConsole, mountGateway}

// Service phases, as the health endpoints report them.
const (
	phaseStarting int32 = iota
	phaseRunning
	phaseDraining
)

// health reports whether a service is fit to work: its phase, its NATS
// connection and, for readiness, whether JetStream answers.
type health struct {
	phase atomic.Int32
	f     *fleet.Fleet
}

// live is nil when NATS is connected and the dispatcher runs.
func (h *health) live() error {
	switch h.phase.Load() {
	case phaseStarting:
		return errors.New("starting")
	case phaseDraining:
		return errors.New("draining: the dispatcher is stopping")
	}
	if st := h.f.Conn.Status(); st != nats.CONNECTED {
		return fmt.Errorf("nats connection is %s", strings.ToLower(st.String()))
	}
	return nil
}

// ready is live plus a JetStream round trip to the input stream.
func (h *health) ready(ctx context.Context) error {
	if err := h.live(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := h.f.JS.Stream(ctx, h.f.Names.InputStream()); err != nil {
		return fmt.Errorf("jetstream: input stream %s: %w", h.f.Names.InputStream(), err)
	}
	return nil
}

// httpEndpoint serves /healthz, /readyz, /metrics and the mounts.
type httpEndpoint struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// listenHTTP binds addr early, so that a busy port fails before NATS
// starts. A port of -1 (as for --listen) or 0 picks a free one.
func listenHTTP(addr string) (*httpEndpoint, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http (JETFLOW_HTTP) %q is not host:port: %w", addr, err)
	}
	if port == "-1" {
		port = "0"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("--http (JETFLOW_HTTP): %w", err)
	}
	return &httpEndpoint{ln: ln}, nil
}

// URL is the endpoint's base URL.
func (e *httpEndpoint) URL() string { return "http://" + e.ln.Addr().String() }

// serve starts answering in the background.
func (e *httpEndpoint) serve(f *fleet.Fleet, reg *prometheus.Registry, h *health, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		report(w, h.live())
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		report(w, h.ready(r.Context()))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	for _, mount := range httpMounts {
		mount(f, mux)
	}
	e.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	e.done = make(chan error, 1)
	go func() { e.done <- e.srv.Serve(e.ln) }()
}

// shutdown stops the endpoint, letting open requests finish until ctx ends.
func (e *httpEndpoint) shutdown(ctx context.Context) error {
	if e.srv == nil {
		return e.ln.Close()
	}
	err := e.srv.Shutdown(ctx)
	if serveErr := <-e.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// report answers 200 "ok" or 503 with the reason.
func report(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}
