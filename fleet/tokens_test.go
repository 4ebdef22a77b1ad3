package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/worker"
)

// lockedLog is a log destination shared by a fleet's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testSigner(t *testing.T, b byte) *token.Signer {
	t.Helper()
	s, err := token.New(bytes.Repeat([]byte{b}, token.SecretSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConfiguredSecret runs a workflow with a configured token secret,
// then starts more dispatchers on the same deployment: one loading the
// secret from the bucket and one with another secret are refused at
// start, one with the same secret starts, and one with another AckWait
// is warned that it changes it for all.
func TestConfiguredSecret(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	secret := testSigner(t, 7)
	f, err := Start(ctx, Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: quiet},
		Dispatcher: &dispatcher.Config{Tokens: secret},
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	if f.Tokens() != secret {
		t.Error("Fleet.Tokens is not the configured signer")
	}
	if _, err := f.Deploy(ctx, "double", []byte(double)); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register("double", "1.0", func(_ context.Context, inv worker.Invocation) (any, error) {
		var n float64
		return n * 2, json.Unmarshal(inv.Input, &n)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	if err := f.Client.StartRun(ctx, "double", "run-1", 7); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, "run-1"); err != nil || st.Status != "done" {
		t.Fatalf("run with a configured secret: %+v, %v", st, err)
	}

	join := func(dc dispatcher.Config, log io.Writer) (*Fleet, error) {
		l := quiet
		if log != nil {
			l = slog.New(slog.NewTextHandler(log, nil))
		}
		g, err := Start(ctx, Config{URL: f.URL(), SkipProvision: true, Dispatcher: &dc, Logger: l})
		if err == nil {
			t.Cleanup(func() { _ = g.Stop(context.Background()) })
		}
		return g, err
	}
	for name, dc := range map[string]dispatcher.Config{
		"loading from the bucket": {},
		"another secret":          {Tokens: testSigner(t, 8)},
	} {
		if _, err := join(dc, nil); !errors.Is(err, token.ErrDisagree) {
			t.Errorf("a dispatcher %s started: %v", name, err)
		}
	}
	if _, err := join(dispatcher.Config{Tokens: secret}, nil); err != nil {
		t.Errorf("a dispatcher with the same secret: %v", err)
	}
	var log lockedLog
	if _, err := join(dispatcher.Config{Tokens: secret, AckWait: 5 * time.Second}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "changes the AckWait all dispatchers share") || !strings.Contains(log.String(), "before=30s after=5s") {
		t.Errorf("no warning of the changed AckWait:\n%s", log.String())
	}
}
