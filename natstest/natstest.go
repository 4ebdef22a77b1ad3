// Package natstest starts real nats-servers with JetStream for tests: one
// server on a random loopback port with a t.TempDir() store, or a cluster
// of several, each stopped when the test ends. Any package's tests may
// import it; nothing outside tests should.
package natstest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/embedded"
)

// StartTimeout bounds starting, stopping and waiting on servers.
const StartTimeout = 30 * time.Second

// Option adjusts the servers a helper starts.
type Option func(*settings)

type settings struct {
	logLevel slog.Level
	logger   *slog.Logger
	memory   bool
	edit     func(*embedded.Config)
}

// WithLogLevel logs the servers' lines from level up to t.Log
// (default slog.LevelWarn).
func WithLogLevel(level slog.Level) Option { return func(s *settings) { s.logLevel = level } }

// WithLogger sends the servers' log to l instead of t.Log.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithMemoryStore starts servers without a data directory: their Storage
// is memory and nothing survives a restart (do not restart cluster nodes
// started this way).
func WithMemoryStore() Option { return func(s *settings) { s.memory = true } }

// WithConfig edits each server's Config last.
func WithConfig(edit func(*embedded.Config)) Option { return func(s *settings) { s.edit = edit } }

func collect(opts []Option) settings {
	s := settings{logLevel: slog.LevelWarn}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// Server starts a JetStream server on 127.0.0.1 with a random port and a
// t.TempDir() file store; it stops when the test ends.
func Server(t testing.TB, opts ...Option) *embedded.Server {
	t.Helper()
	set := collect(opts)
	cfg := embedded.Config{
		Listen:     "127.0.0.1:-1",
		ServerName: "test",
		Logger:     set.testLogger(t),
	}
	if !set.memory {
		cfg.DataDir = t.TempDir()
	}
	if set.edit != nil {
		set.edit(&cfg)
	}
	s, err := embedded.New(cfg)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	t.Cleanup(func() {
		stop(t, s)
		conns.forget(s)
	})
	return s
}

func stop(t testing.TB, s *embedded.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("natstest: %v", err)
	}
}

// Restart stops s, starts it again on the same store and port, and waits
// until every open connection Conn made to it has reconnected.
func Restart(t testing.TB, s *embedded.Server) {
	t.Helper()
	stop(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("natstest: restart: %v", err)
	}
	for _, nc := range conns.of(s) {
		if !nc.IsClosed() {
			WaitConnected(t, nc)
		}
	}
}

// conns remembers the connections Conn made, so that Restart can wait
// for them.
var conns = connRegistry{m: map[*embedded.Server][]*nats.Conn{}}

type connRegistry struct {
	mu sync.Mutex
	m  map[*embedded.Server][]*nats.Conn
}

func (r *connRegistry) add(s *embedded.Server, nc *nats.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[s] = append(r.m[s], nc)
}

func (r *connRegistry) of(s *embedded.Server) []*nats.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*nats.Conn(nil), r.m[s]...)
}

func (r *connRegistry) forget(s *embedded.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, s)
}

// Conn opens an in-process connection to s that reconnects across
// restarts quickly; it is closed when the test ends.
func Conn(t testing.TB, s *embedded.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	all := append([]nats.Option{nats.ReconnectWait(20 * time.Millisecond), nats.MaxReconnects(-1)}, opts...)
	nc, err := s.Connect(all...)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	conns.add(s, nc)
	t.Cleanup(nc.Close)
	return nc
}

// WaitConnected waits until nc completes a round trip to a server. Call
// it after a restart: a request written to the old connection before the
// client noticed it close is lost and would only time out.
func WaitConnected(t testing.TB, nc *nats.Conn) {
	t.Helper()
	WaitFor(t, StartTimeout, "client connected", func() error { return nc.FlushTimeout(200 * time.Millisecond) })
}

// JetStream returns the JetStream API over nc.
func JetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return js
}

// MinWait is the least time WaitFor waits before it fails a test.
const MinWait = time.Minute

// WaitFor checks cond every 10ms until it returns nil, failing the test
// with cond's last error after timeout. Use it for conditions that have no
// signal to wait on (server state, stream state). A timeout below
// MinWait is raised to it: the bound only turns a hang into a failure,
// and a loaded CI machine takes tens of seconds for what takes
// milliseconds alone.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	timeout = max(timeout, MinWait)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("natstest: %s: not reached after %s: %v", what, timeout, err)
		case <-tick.C:
		}
	}
}

// testLogger returns the configured logger, or one that writes to t.Log
// until the test ends (server goroutines may log during shutdown, and
// t.Log after the test has finished panics).
func (s settings) testLogger(t testing.TB) *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	w := &testWriter{t: t}
	// Registered before any server's cleanup, so it runs after them.
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: s.logLevel}))
}

type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
