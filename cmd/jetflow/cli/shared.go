package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// What the verbs share: reaching the deployment, reading arguments, and
// the way every verb about one run begins.

// dialFleet connects a client verb to the deployment; stop disconnects.
func dialFleet(ctx context.Context, s streams, conn *connConfig) (f *fleet.Fleet, stop func(), err error) {
	f, err = conn.open(ctx, openOptions{Logger: verbLogger(s.err)})
	if err != nil {
		return nil, nil, err
	}
	return f, func() { stopQuietly(f) }, nil
}

// stopQuietly closes a client verb's fleet; a client has nothing to drain
// that matters once its answer is printed.
func stopQuietly(f *fleet.Fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.Stop(ctx)
}

// verbLogger logs warnings and errors only: a client verb's output is its
// answer, not a log.
func verbLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// onRun is how every verb about one run begins (status, event, cancel,
// history, replay, graph --run): it checks the run id, named arg in its
// error ("argument RUN", "--run"), then the verb's other arguments (check,
// which needs no server; nil for none), dials the deployment and calls do
// with it. The deployment is disconnected when do returns.
func onRun(ctx context.Context, s streams, conn *connConfig, arg, id string, check func() error, do func(context.Context, *fleet.Fleet) error) error {
	if err := subjects.CheckRunID(id); err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	f, stop, err := dialFleet(ctx, s, conn)
	if err != nil {
		return err
	}
	defer stop()
	return do(ctx, f)
}

// readRun reads run id's record and decodes its state; the error of a
// run without one wraps kvstore.ErrRunNotFound.
func readRun(ctx context.Context, f *fleet.Fleet, id string) (*runrecord.Record, *run.State, error) {
	data, _, err := f.Runs.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		return nil, nil, err
	}
	return rec, st, nil
}

// checkLive refuses a run that has ended, and one that does not exist:
// no record and no start in the input stream, so that dispatchers would
// drop the input at once (an input sent before its run's start is never
// kept for it), unless beforeStart asks to send it anyway; a note then
// says how short the window is. A run whose start is stored but not yet
// taken up gets the input once a dispatcher takes it (a note says for
// how long it waits).
func checkLive(ctx context.Context, s streams, f *fleet.Fleet, id, what string, beforeStart bool) error {
	st, err := f.Client.Status(ctx, id)
	switch {
	case errors.Is(err, kvstore.ErrRunNotFound):
		if _, started := startedAt(ctx, f, id); !started {
			if beforeStart {
				fmt.Fprintf(s.err, "note: run %s does not exist yet; sending %s as --before-start asks. There is no early window: the dispatchers keep an input for a run without a record only when the run's start is stored before it in the input stream, and then for %s; an input stored before its start is dropped at once (history shows it as no-run)\n", id, what, earlyWait)
				return nil
			}
			fmt.Fprintf(s.err, "run %s does not exist: it has no record and the input stream holds no start of it (prefix %q); dispatchers would drop %s at once, and an input sent before its run's start is never kept for it. Check the id, or start the run first (--before-start sends it anyway)\n", id, f.Names.Prefix(), what)
			return exitError{exitFailed}
		}
		fmt.Fprintf(s.err, "note: run %s has no record yet: its start is stored and waits for a dispatcher, which keeps %s for it for %s\n", id, what, earlyWait)
		return nil
	case err != nil:
		return err
	case run.Status(st.Status).Terminal():
		return fmt.Errorf("run %s is already %s: %s can no longer change it", id, st.Status, what)
	}
	return nil
}

// beforeStartUsage is the --before-start flag of event and cancel.
const beforeStartUsage = "send even if the run does not exist yet (its start is on its way from elsewhere); only an input stored after its run's start is kept for it"

// earlyWait is how long the dispatchers keep an input whose run's start
// is stored before it but not yet taken up (dispatcher.Config's
// UnknownRunWait, counted from the input's stream time).
const earlyWait = "up to a minute, or twice the dispatchers' --ack-wait if that is longer"

// compiledWorkflows returns the definitions of f's registry, compiled: a
// client.Tracker's Workflow.
func compiledWorkflows(ctx context.Context, f *fleet.Fleet) func(name, revision string) (*workflow.Workflow, error) {
	return func(name, revision string) (*workflow.Workflow, error) {
		d, err := f.Registry.GetRevision(ctx, name, revision)
		if err != nil {
			return nil, err
		}
		return workflow.CompileJSON(d.Doc, workflow.Options{})
	}
}

// namedArgs requires exactly the named positional arguments, naming the
// missing or extra ones.
func namedArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return fmt.Errorf("missing argument %s (usage: %s)", strings.Join(names[len(args):], " "), cmd.UseLine())
		case len(args) > len(names):
			return fmt.Errorf("unexpected argument %q (usage: %s)", args[len(names)], cmd.UseLine())
		}
		return nil
	}
}

// readInput reads a file argument; "-" is standard input.
func readInput(s streams, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(s.in)
	}
	return os.ReadFile(name)
}

// jsonArg reads a flag's JSON value: the text itself, @FILE, or @- for
// standard input. An empty flag is nil.
func jsonArg(s streams, flag, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	data := []byte(v)
	if file, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = readInput(s, file); err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	doc, err := value.Decode(data, value.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", flag, err)
	}
	text, err := value.Canonical(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return json.RawMessage(text), nil
}

// operatorIdentity names who runs a state-changing verb, for its audit
// entry: --operator where the verb has it, else JETFLOW_OPERATOR, else
// the OS user.
func operatorIdentity(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("operator"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	if v := os.Getenv("JETFLOW_OPERATOR"); v != "" {
		return v
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// operatorOrEnv is an --operator flag's value, or JETFLOW_OPERATOR.
func operatorOrEnv(operator string) string {
	if operator == "" {
		return os.Getenv("JETFLOW_OPERATOR")
	}
	return operator
}

// unaudited are flags an audit entry's command leaves out: credentials,
// and settings of the connection rather than of the action.
var unaudited = map[string]bool{
	"creds": true, "nkey": true, "user": true, "password": true, "tls-ca": true, "tls-cert": true, "tls-key": true,
	"token-secret": true, "token-secret-file": true, "token-secret-previous": true, "inbox-prefix": true, "timeout": true,
}

// commandOf is the command line of cmd as an audit entry records it: its
// arguments and the flags given, without credentials.
func commandOf(cmd *cobra.Command, args []string) string {
	out := []string{cmd.CommandPath()}
	for _, a := range args {
		out = append(out, shellWord(a))
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if unaudited[f.Name] {
			return
		}
		v := f.Value.String()
		switch {
		case f.Name == "nats":
			v = redactURLs(v)
		case f.Value.Type() == "bool":
			out = append(out, "--"+f.Name)
			return
		}
		out = append(out, "--"+f.Name, shellWord(v))
	})
	return strings.Join(out, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellWord quotes s for a POSIX shell.
func shellWord(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// recordAudit appends the audit entry of a state-changing verb that
// acted on the deployment: accepted when err is nil, else refused with
// err. It returns err; an entry it cannot write is reported on standard
// error, never dropped silently.
func recordAudit(ctx context.Context, s streams, cmd *cobra.Command, args []string, f *fleet.Fleet, e wire.AuditEntry, err error) error {
	e.Source, e.Who, e.Command, e.Result = subjects.AuditCLI, operatorIdentity(cmd), commandOf(cmd, args), wire.AuditAccepted
	if err != nil {
		e.Result, e.Detail = wire.AuditRefused, err.Error()
		var ex exitError
		if errors.As(err, &ex) {
			e.Detail = fmt.Sprintf("exit %d", ex.code)
		}
	}
	if werr := f.Client.WriteAudit(context.WithoutCancel(ctx), e); werr != nil {
		fmt.Fprintf(s.err, "warning: the audit entry of this %s was not written: %v\n", e.Action, werr)
	}
	return err
}

// The CLI renders every time one way: RFC 3339 in UTC with milliseconds
// (2026-12-02T06:24:26.422Z), which sorts as text and parses anywhere;
// where a person reads it, followed by how far it is from now.

// timeLayout is the one layout of the times the CLI prints.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// stamp is t in the CLI's one time format.
func stamp(t time.Time) string { return t.UTC().Format(timeLayout) }

// msTime is a Unix millisecond time in the CLI's format; "" for none.
func msTime(ms float64) string {
	if ms <= 0 {
		return ""
	}
	return stamp(time.UnixMilli(int64(ms)))
}

// when is t for a person: the stamp and how far it is from now,
// "2026-12-02T06:25:26.422Z (in 42s)" or "… (3m5s ago)".
func when(t, now time.Time) string {
	return stamp(t) + " (" + fromNow(t, now) + ")"
}

// humanTime is when(t) as of the wall clock.
func humanTime(t time.Time) string { return when(t, time.Now()) }

// fromNow is "in 42s", "3m5s ago" or "now", to the second.
func fromNow(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return "in " + d.String()
	case d < 0:
		return (-d).String() + " ago"
	}
	return "now"
}

// resultReader returns a client.Tracker's Result: the task result stored
// at a sequence of the input stream, read on demand; nil for any other
// input or one that cannot be read.
func resultReader(ctx context.Context, f *fleet.Fleet) func(seq uint64) *wire.Result {
	var stream jetstream.Stream
	return func(seq uint64) *wire.Result {
		if stream == nil {
			var err error
			if stream, err = f.JS.Stream(ctx, f.Names.InputStream()); err != nil {
				return nil
			}
		}
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			return nil
		}
		if _, kind, _, err := f.Names.ParseInput(m.Subject); err != nil || kind != subjects.KindResult {
			return nil
		}
		var r wire.Result
		if json.Unmarshal(m.Data, &r) != nil {
			return nil
		}
		return &r
	}
}

// failedTask names the task run st's failure is about, with its worker's
// error when the input the record applied last is that task's result;
// nil when the failure is no task's.
func failedTask(ctx context.Context, f *fleet.Fleet, wf *workflow.Workflow, st *run.State, rec *runrecord.Record) *client.FailedTask {
	ft := client.FailedTaskOf(wf, st)
	if ft == nil || len(rec.Applied) == 0 {
		return ft
	}
	if r := resultReader(ctx, f)(rec.Applied[len(rec.Applied)-1]); r != nil && r.Node == ft.Node && r.Error != nil {
		ft.Code, ft.Message = r.Error.Code, r.Error.Message
	}
	return ft
}
