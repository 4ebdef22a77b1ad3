package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func start(t *testing.T, cfg embedded.Config) *embedded.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	s, err := embedded.Start(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s, err := embedded.New(embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if _, err := s.InProcessConn(); !errors.Is(err, embedded.ErrNotRunning) {
		t.Fatalf("InProcessConn before Start = %v, want ErrNotRunning", err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	if !s.Running() || s.NATS() == nil || s.Storage() != jetstream.FileStorage {
		t.Fatalf("running=%v nats=%v storage=%v", s.Running(), s.NATS(), s.Storage())
	}
	url := s.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":-1") {
		t.Fatalf("ClientURL = %q", url)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if s.Running() || s.NATS() != nil {
		t.Fatal("still running after Stop")
	}
	if s.ClientURL() != url {
		t.Fatalf("ClientURL after Stop = %q, want %q", s.ClientURL(), url)
	}
}

// A restart keeps the store and the randomly chosen port, and clients of
// both kinds reconnect by themselves.
func TestRestartKeepsStoreAndPort(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := start(t, embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()})
	url := s.ClientURL()

	inproc, err := s.Connect(nats.ReconnectWait(10*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	tcp, err := nats.Connect(url, nats.ReconnectWait(10*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	js, _ := jetstream.New(inproc)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}

	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.ClientURL() != url {
		t.Fatalf("URL changed across restart: %q -> %q", url, s.ClientURL())
	}
	for name, nc := range map[string]*nats.Conn{"in-process": inproc, "tcp": tcp} {
		// A request written to the old connection before the client saw
		// it close is lost, so wait for a round trip first.
		natstest.WaitConnected(t, nc)
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(ctx, "b")
		if err != nil {
			t.Fatalf("%s: bucket after restart: %v", name, err)
		}
		e, err := kv.Get(ctx, "k")
		if err != nil || string(e.Value()) != "v" {
			t.Fatalf("%s: value after restart = %v, %v", name, e, err)
		}
	}
}

func TestMemoryServerIsInProcessOnly(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := start(t, embedded.Config{NoListen: true})
	if s.Storage() != jetstream.MemoryStorage || s.ClientURL() != "" {
		t.Fatalf("storage=%v url=%q", s.Storage(), s.ClientURL())
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	store := s.NATS().StoreDir()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary store %s left behind: %v", store, err)
	}
}

func TestBusyPortFailsFast(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	began := time.Now()
	_, err = embedded.Start(testCtx(t), embedded.Config{Listen: l.Addr().String(), Logger: quiet()})
	if err == nil {
		t.Fatal("started on a busy port")
	}
	if !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("error does not name the address: %v", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("took %s to report a busy port", d)
	}
}

func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	cases := map[string]embedded.Config{
		"bad listen":       {Listen: "nohostport"},
		"bad port":         {Listen: "127.0.0.1:99999"},
		"negative payload": {MaxPayload: -1},
		"cluster no name":  {Cluster: &embedded.ClusterConfig{}},
		"bad route":        {Cluster: &embedded.ClusterConfig{Name: "c", Routes: []string{"nats-route://"}}},
	}
	for name, cfg := range cases {
		if _, err := embedded.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "embedded: ") {
			t.Errorf("%s: New = %v, want an embedded: error", name, err)
		}
	}
}

// The server's log goes to the injected slog logger.
func TestLogsToSlog(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf bytes.Buffer
	h := slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelInfo})
	s := start(t, embedded.Config{Listen: "127.0.0.1:-1", ServerName: "logtest", Logger: slog.New(h)})
	_ = s.Stop(testCtx(t))
	mu.Lock()
	defer mu.Unlock()
	out := buf.String()
	for _, want := range []string{"component=nats-server", "server_name=logtest", "level=INFO", "Server is ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "level=DEBUG") {
		t.Error("debug lines logged with Info level")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Starting and stopping repeatedly, also concurrently, neither fails nor
// leaks (goleak checks at the end).
func TestStartStopStress(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s, err := embedded.New(embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if err := s.Start(ctx); err != nil {
					errs <- err
				}
				if err := s.Stop(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s.Running() {
		t.Fatal("running after the last Stop")
	}
}

// TestDurabilityModes checks that each durability setting reaches the
// JetStream the server runs, and that the two fsync settings exclude
// each other.
func TestDurabilityModes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		always   bool
		interval time.Duration
		want     time.Duration // the interval the server runs with
	}{
		{"default", false, 0, 2 * time.Minute},
		{"fsync every write", true, 0, 0},
		{"bounded interval", false, 250 * time.Millisecond, 250 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var log lockedBuffer
			s := start(t, embedded.Config{
				Listen: "127.0.0.1:-1", DataDir: t.TempDir(), SyncAlways: c.always, SyncInterval: c.interval,
				Logger: slog.New(slog.NewTextHandler(&log, nil)),
			})
			if want := "sync=\"every " + map[bool]string{true: "write", false: c.want.String()}[c.always]; !strings.Contains(log.String(), want) {
				t.Errorf("the log does not say %s:\n%s", want, log.String())
			}
			js := s.NATS().JetStreamConfig()
			if js == nil {
				t.Fatal("JetStream is not enabled")
			}
			if js.SyncAlways != c.always {
				t.Errorf("SyncAlways = %v, want %v", js.SyncAlways, c.always)
			}
			if !c.always && js.SyncInterval != c.want {
				t.Errorf("SyncInterval = %s, want %s", js.SyncInterval, c.want)
			}
		})
	}
	for _, bad := range []embedded.Config{
		{Listen: "127.0.0.1:-1", SyncAlways: true, SyncInterval: time.Second},
		{Listen: "127.0.0.1:-1", SyncInterval: -time.Second},
	} {
		if _, err := embedded.New(bad); err == nil || !strings.Contains(err.Error(), "SyncInterval") {
			t.Errorf("New(SyncAlways %v, SyncInterval %s) = %v, want an error naming SyncInterval", bad.SyncAlways, bad.SyncInterval, err)
		}
	}
}

// lockedBuffer is a bytes.Buffer the server's goroutines may log to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
