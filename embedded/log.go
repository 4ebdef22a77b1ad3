package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// slogAdapter routes nats-server's printf-style log to slog.
type slogAdapter struct {
	l *slog.Logger
	// fatal keeps the last fatal message: the server reports start-up
	// failures (port in use, bad store) only through Fatalf.
	fatal atomic.Pointer[string]
}

func newSlogAdapter(l *slog.Logger, serverName string) *slogAdapter {
	return &slogAdapter{l: l.With(slog.String("component", "nats-server"), slog.String("server_name", serverName))}
}

func (a *slogAdapter) log(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	// nats-server prefixes some lines with "[...] " tags; they stay in the
	// message, which is what operators grep for.
	a.l.Log(ctx, level, strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// Noticef is routine operation (startup, leader changes): Info.
func (a *slogAdapter) Noticef(format string, v ...any) { a.log(slog.LevelInfo, format, v) }

// Warnf is Warn.
func (a *slogAdapter) Warnf(format string, v ...any) { a.log(slog.LevelWarn, format, v) }

// Fatalf is logged at Error with fatal=true; the default nats-server logger
// would exit the process, which an embedding program must decide itself.
func (a *slogAdapter) Fatalf(format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	a.fatal.Store(&msg)
	a.l.Error(msg, slog.Bool("fatal", true))
}

// lastFatal returns the last fatal message, or "".
func (a *slogAdapter) lastFatal() string {
	if p := a.fatal.Load(); p != nil {
		return *p
	}
	return ""
}

// Errorf is Error.
func (a *slogAdapter) Errorf(format string, v ...any) { a.log(slog.LevelError, format, v) }

// Debugf is Debug; the server only calls it when Debug is enabled.
func (a *slogAdapter) Debugf(format string, v ...any) { a.log(slog.LevelDebug, format, v) }

// Tracef is below Debug: protocol traces are only for deep debugging.
func (a *slogAdapter) Tracef(format string, v ...any) { a.log(slog.LevelDebug-4, format, v) }
