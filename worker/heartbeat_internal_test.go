package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
)

// The heartbeat reporter on a manual clock: no server, so every wait is
// on the clock, and the test moves it only once the reporter is parked
// on its timer (clock.Manual.AwaitTimers). The server's side, that a
// heartbeat within AckWait prevents a redelivery, is
// TestHeartbeatsPreventRedelivery's.

// beatMsg is an invocation message that counts its heartbeats.
type beatMsg struct {
	jetstream.Msg
	beats atomic.Int32
}

func (m *beatMsg) InProgress() error { m.beats.Add(1); return nil }

// ackWaitConsumer is a task consumer whose AckWait a test changes, as a
// deploy does; it counts the reads.
type ackWaitConsumer struct {
	jetstream.Consumer
	mu      sync.Mutex
	ackWait time.Duration
	reads   int
}

func (c *ackWaitConsumer) info() *jetstream.ConsumerInfo {
	return &jetstream.ConsumerInfo{Config: jetstream.ConsumerConfig{AckWait: c.ackWait}}
}

func (c *ackWaitConsumer) CachedInfo() *jetstream.ConsumerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info()
}

func (c *ackWaitConsumer) Info(context.Context) (*jetstream.ConsumerInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.info(), nil
}

func (c *ackWaitConsumer) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ackWait = d
}

func (c *ackWaitConsumer) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// beating is a reporter running on a manual clock.
type beating struct {
	clk  *clock.Manual
	cons *ackWaitConsumer
	msg  *beatMsg
	pace *pace
	logs *logLines
}

// startBeating starts the reporter of one invocation of a consumer whose
// AckWait is ackWait, and parks it.
func startBeating(t *testing.T, cfg Config, ackWait time.Duration) *beating {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	logs := &logLines{}
	cfg.Clock, cfg.Logger = clk, slog.New(logs)
	cfg = cfg.WithDefaults()
	w := &Worker{cfg: cfg, log: cfg.Logger}
	b := &beating{clk: clk, cons: &ackWaitConsumer{ackWait: ackWait}, msg: &beatMsg{}, logs: logs}
	b.pace = newPace(cfg.ConsumerRefresh, time.Second, clk, cfg.Logger)
	b.pace.bind(b.cons)
	stop := w.keepAlive(t.Context(), b.msg, b.pace, cfg.Logger)
	t.Cleanup(stop)
	b.parked(t)
	return b
}

// parked waits until the reporter waits on its timer.
func (b *beating) parked(t *testing.T) {
	t.Helper()
	if err := b.clk.AwaitTimers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
}

// advance moves the clock by d and waits for the reporter to park again
// if its timer fired.
func (b *beating) advance(t *testing.T, d time.Duration) {
	t.Helper()
	b.clk.Advance(d)
	b.parked(t)
}

func (b *beating) wantBeats(t *testing.T, when string, want int32) {
	t.Helper()
	if got := b.msg.beats.Load(); got != want {
		t.Errorf("%s: %d heartbeats, want %d", when, got, want)
	}
}

func TestHeartbeatPace(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cfg     Config
		ackWait time.Duration
		every   time.Duration // the expected pace
	}{
		"a third of AckWait":                         {ackWait: 3 * time.Second, every: time.Second},
		"at most ConsumerRefresh":                    {ackWait: time.Minute, every: DefaultConsumerRefresh},
		"HeartbeatInterval, at most half of AckWait": {cfg: Config{HeartbeatInterval: time.Hour}, ackWait: 4 * time.Second, every: 2 * time.Second},
		"HeartbeatInterval below the cap":            {cfg: Config{HeartbeatInterval: 300 * time.Millisecond}, ackWait: 4 * time.Second, every: 300 * time.Millisecond},
		"the default startToClose when AckWait is unknown": {
			cfg: Config{ConsumerRefresh: time.Hour}, ackWait: 0, every: DefaultStartToClose / 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startBeating(t, tc.cfg, tc.ackWait)
			for i := range int32(3) {
				b.advance(t, tc.every-time.Millisecond)
				b.wantBeats(t, "a millisecond before the heartbeat is due", i)
				b.advance(t, time.Millisecond)
				b.wantBeats(t, "when it is due", i+1)
			}
		})
	}
}

// TestRunningInvocationFollowsRedeploy: an invocation already running
// when a deploy lowers startToClose from a minute to 3 s is re-paced
// within ConsumerRefresh, well before the new AckWait ends. Its worker's
// HeartbeatInterval is set (one hour, so half the AckWait), so only the
// re-read can save it from redelivery.
func TestRunningInvocationFollowsRedeploy(t *testing.T) {
	t.Parallel()
	const short, refresh = 3 * time.Second, 200 * time.Millisecond
	b := startBeating(t, Config{HeartbeatInterval: time.Hour, ConsumerRefresh: refresh}, time.Minute)
	b.cons.set(short) // what a deploy does
	b.advance(t, refresh)
	if got, _ := b.pace.current(); got != short {
		t.Fatalf("after ConsumerRefresh the worker knows AckWait %v, want %v", got, short)
	}
	if !b.logs.contains("AckWait changed") {
		t.Error("the worker did not log the new AckWait")
	}
	b.wantBeats(t, "right after the re-read", 0)
	// Half the new AckWait after the invocation began.
	b.advance(t, short/2-refresh)
	b.wantBeats(t, "half the new AckWait after the invocation began", 1)
	b.advance(t, short/2)
	b.wantBeats(t, "one more half", 2)
}

// Re-reads of the AckWait come every ConsumerRefresh while an invocation
// runs, and not more often.
func TestRunningInvocationRereadsEveryConsumerRefresh(t *testing.T) {
	t.Parallel()
	const refresh = time.Second
	b := startBeating(t, Config{HeartbeatInterval: time.Hour, ConsumerRefresh: refresh}, time.Hour)
	for i := range 3 {
		b.advance(t, refresh-time.Millisecond)
		if got := b.cons.readCount(); got != i {
			t.Fatalf("%d reads before the period ended, want %d", got, i)
		}
		b.advance(t, time.Millisecond)
		if got := b.cons.readCount(); got != i+1 {
			t.Fatalf("%d reads after %d periods, want %d", got, i+1, i+1)
		}
	}
}

// logLines is a slog.Handler that keeps every message and attribute.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}

func (l *logLines) contains(part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, part) {
			return true
		}
	}
	return false
}
