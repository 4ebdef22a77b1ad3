package cli

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// demoOrder is examples/order.json with the payment wait cut from 60 s to
// demoPaymentWait, so that an unpaid order expires while you watch. A
// test keeps the two documents otherwise equal.
//
//go:embed demo_order.json
var demoOrder []byte

const demoPaymentWait = 1500 * time.Millisecond

// demoRetry retries failed tasks sooner than the default policy does, so
// that the carrier's hiccup costs the demo a moment, not seconds.
func demoRetry(task, version string) run.RetryPolicy {
	return run.RetryPolicy{MaxAttempts: 3, InitialIntervalMs: 200, MaxIntervalMs: 1000, Multiplier: 2}
}

// demoRun is one order the demo places and what became of it.
type demoRun struct {
	id, story string
	input     map[string]any
	pay       bool   // pay in full when the run waits for payment
	want      string // the final state it should end in

	tr     *client.Tracker
	view   *view
	path   []string
	tasks  []client.Progress // settled attempts, in the order they settled
	paid   bool
	status *wire.Status
}

func demoRuns() []*demoRun {
	order := func(sku string, qty int, customer string) map[string]any {
		return map[string]any{"sku": sku, "qty": qty, "customer": customer}
	}
	return []*demoRun{
		{
			id: "order-paid", story: "2 keyboards for ada, paid in full; the carrier fails once",
			input: order("KB-42", 2, "ada"), pay: true, want: "done",
		},
		{
			id: "order-no-stock", story: "3 mugs when the shelf holds 1",
			input: order("MUG-7", 3, "grace"), want: "rejected",
		},
		{
			id: "order-risky", story: "a monitor for a customer the fraud model distrusts",
			input: order("MON-27", 1, "mallory"), want: "rejected",
		},
		{
			id: "order-unpaid", story: "a lamp nobody pays for",
			input: order("LAMP-3", 1, "linus"), want: "expired",
		},
		{
			id: "order-unknown", story: "a discontinued headset the warehouse has no record of",
			input: order("DISC-9", 1, "ada"), want: "rejected",
		},
	}
}

func newDemo(s streams) *cobra.Command {
	var timeout time.Duration
	var verbose bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the order workflow end to end on an embedded server, in seconds",
		Long: "demo needs nothing else running. It starts an embedded nats-server with in-memory\n" +
			"storage on a free loopback port, a dispatcher, and Go SDK workers for the five tasks of\n" +
			"examples/order.json (its payment wait shortened to " + demoPaymentWait.String() + "), places five orders that\n" +
			"end in every way the workflow allows, pays for one, lets one expire, and prints each\n" +
			"run's path and result. It exits 0 when every run ended as expected.\n\n" +
			"`jetflow demo workers` serves the same five tasks against a running deployment, for\n" +
			"the README's tour.",
		Args: namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return fmt.Errorf("--timeout must be positive, got %s", timeout)
			}
			return demo(cmd.Context(), s, timeout, verbose)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up when the runs have not all ended by then")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every state and task of every run as it happens")
	cmd.AddCommand(newDemoWorkers(s))
	return cmd
}

func demo(ctx context.Context, s streams, timeout time.Duration, verbose bool) error {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelError}))
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet},
		Dispatcher: &dispatcher.Config{RunOptions: run.Options{Retry: demoRetry}},
		Logger:     quiet,
	})
	if err != nil {
		return err
	}
	defer stopWithin(f.Stop)
	d, err := f.Deploy(ctx, "order", demoOrder)
	if err != nil {
		return fmt.Errorf("deploying the demo's order workflow: %w", err)
	}
	// A short poll lets the workers stop promptly at the end.
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 250 * time.Millisecond, Logger: quiet})
	if err != nil {
		return err
	}
	if err := registerDemoTasks(w); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer stopWithin(w.Stop)
	watch, err := f.Runs.Watch(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = watch.Stop() }()

	var tasks []string
	for _, t := range d.Tasks {
		tasks = append(tasks, t.Task+"@"+t.Version)
	}
	fmt.Fprintf(s.out, "jetflow demo: the order workflow, start to end, on an embedded NATS server\n\n")
	fmt.Fprintf(s.out, "  server    %s (embedded, in-memory storage, started in %s)\n", f.URL(), time.Since(began).Round(time.Millisecond))
	fmt.Fprintf(s.out, "  workflow  order@%s (examples/order.json, payment wait shortened to %s)\n", d.Revision, demoPaymentWait)
	fmt.Fprintf(s.out, "  workers   %s (in process, Go SDK)\n\n", strings.Join(tasks, ", "))

	runs := demoRuns()
	byID := map[string]*demoRun{}
	width := 0
	for _, r := range runs {
		width = max(width, len(r.id))
	}
	fmt.Fprintf(s.out, "Placing %d orders:\n", len(runs))
	started := time.Now()
	for _, r := range runs {
		r.tr = &client.Tracker{Workflow: compiledWorkflows(ctx, f), Result: resultReader(ctx, f)}
		if verbose {
			r.view = &view{w: s.out, prefix: fmt.Sprintf("  %-*s ", width, r.id), running: map[string]bool{}}
		}
		byID[r.id] = r
		if err := f.Client.StartRun(ctx, "order", r.id, r.input); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "  %-*s  %s\n", width, r.id, r.story)
	}
	fmt.Fprintf(s.out, "\nAs it happens:\n")
	note := func(r *demoRun, format string, args ...any) {
		fmt.Fprintf(s.out, "  %6.3fs  %-*s  %s\n", time.Since(started).Seconds(), width, r.id, fmt.Sprintf(format, args...))
	}
	if err := demoFollow(ctx, f, watch, byID, note); err != nil {
		var unfinished []string
		for _, r := range runs {
			if r.status == nil {
				unfinished = append(unfinished, r.id)
			}
		}
		return fmt.Errorf("%w (runs not ended: %s)", err, strings.Join(unfinished, ", "))
	}
	ok := demoSummary(s.out, nodeOrder(demoOrder), runs, time.Since(started), time.Since(began))
	if !ok {
		return exitError{1}
	}
	return nil
}

// demoFollow reads run records until every run has ended, paying for the
// orders that pay and noting what happens.
func demoFollow(ctx context.Context, f *fleet.Fleet, watch jetstream.KeyWatcher, byID map[string]*demoRun, note func(*demoRun, string, ...any)) error {
	left := len(byID)
	for left > 0 {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: %w", context.Cause(ctx))
		case e = <-watch.Updates():
		}
		if e == nil || e.Operation() != jetstream.KeyValuePut || byID[e.Key()] == nil {
			continue
		}
		r := byID[e.Key()]
		rec, err := runrecord.Decode(e.Value())
		if err != nil {
			return err
		}
		steps, err := r.tr.Observe(rec)
		if err != nil {
			return err
		}
		if r.view != nil {
			r.view.show(steps)
		}
		for _, st := range steps {
			switch st.Kind {
			case client.ProgressState:
				r.path = append(r.path, stateName(st.State))
			case client.ProgressSettle:
				r.tasks = append(r.tasks, st)
				if st.Retry {
					note(r, "%s attempt %d failed%s; the dispatcher retries it", st.Name, st.Attempt, failure(st))
				} else if !st.OK {
					note(r, "%s failed%s", st.Name, failure(st))
				}
			case client.ProgressWaiting:
				if err := demoWaiting(ctx, f, r, rec, note); err != nil {
					return err
				}
			case client.ProgressEnd:
				r.status = st.Status
				left--
				note(r, "%s", endText(st.Status))
			}
		}
	}
	return nil
}

// demoWaiting pays for an order that pays, and says so of one that will
// not.
func demoWaiting(ctx context.Context, f *fleet.Fleet, r *demoRun, rec *runrecord.Record, note func(*demoRun, string, ...any)) error {
	st, err := step.DecodeState(rec)
	if err != nil {
		return err
	}
	data, _ := st.Context.Data.(map[string]any)
	total, _ := data["total"].(float64)
	if !r.pay {
		note(r, "waits for a payment of %.2f EUR that never comes", total)
		return nil
	}
	if r.paid {
		return nil
	}
	r.paid = true
	note(r, "waits for a payment of %.2f EUR: sending event payment {\"amount\": %.2f}", total, total)
	return f.Client.SendEvent(ctx, r.id, "payment", map[string]any{"amount": total, "method": "card"})
}

// endText says how a run ended: "ended in rejected", "failed in check".
func endText(st *wire.Status) string {
	if st.Status == wire.StatusDone {
		return "ended in " + stateName(st.State)
	}
	return st.Status + " in " + stateName(st.State)
}

func taskMark(s client.Progress) string {
	switch {
	case s.OK:
		return s.Name + " ✓"
	case s.Retry:
		return s.Name + " ↻"
	}
	return s.Name + " ✗"
}

// declaredOrder lists tasks (settled attempts) in the workflow's order, so
// that a summary reads the same every time: by the order the run first
// entered their states, then the order the document declares the nodes
// in (nodes, as the document lists them); attempts of one node in the
// order they settled.
func declaredOrder(nodes, path []string, tasks []client.Progress) []client.Progress {
	out := slices.Clone(tasks)
	rank := func(p client.Progress) (int, int) {
		return slices.Index(path, stateName(p.State)), slices.Index(nodes, p.Node)
	}
	slices.SortStableFunc(out, func(a, b client.Progress) int {
		as, an := rank(a)
		bs, bn := rank(b)
		return cmp.Or(cmp.Compare(as, bs), cmp.Compare(an, bn))
	})
	return out
}

// nodeOrder lists the DAG node ids of a workflow document in the order
// the document declares them (the members of every "nodes" object), which
// its compiled form does not keep.
func nodeOrder(doc []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var ids []string
	var depth, nodesAt int // depth of the open "nodes" object; 0 for none
	key := false           // the next string is an object's member name
	var stack []bool       // per open container: is it an object
	for {
		tok, err := dec.Token()
		if err != nil {
			return ids
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, v == '{')
				depth++
				key = v == '{'
				continue
			default:
				if nodesAt > 0 && depth == nodesAt {
					nodesAt = 0
				}
				stack = stack[:len(stack)-1]
				depth--
			}
		case string:
			if key {
				if nodesAt > 0 && depth == nodesAt {
					ids = append(ids, v)
				}
				if v == "nodes" && nodesAt == 0 {
					nodesAt = depth + 1
				}
				key = false
				continue
			}
		}
		// A value ended: in an object, a key comes next.
		key = len(stack) > 0 && stack[len(stack)-1]
	}
}

// demoSummary prints each run's path and outcome and reports whether
// every run ended as expected.
func demoSummary(w io.Writer, nodes []string, runs []*demoRun, ran, total time.Duration) bool {
	fmt.Fprintf(w, "\nResults:\n")
	color := isTerminal(w)
	ok := true
	for _, r := range runs {
		end := stateName(r.status.State)
		mark, style := "✓", ansiGreen
		if end != r.want || r.status.Status != wire.StatusDone {
			mark, style, ok = "✗", ansiRed, false
		}
		if color {
			mark = paint(ansiBold+style, mark)
		}
		fmt.Fprintf(w, "\n%s %s %s\n", mark, r.id, endText(r.status))
		if end != r.want {
			fmt.Fprintf(w, "    expected to end in %s\n", r.want)
		}
		fmt.Fprintf(w, "    path    %s\n", strings.Join(r.path, " → "))
		var marks []string
		for _, t := range declaredOrder(nodes, r.path, r.tasks) {
			marks = append(marks, taskMark(t))
		}
		fmt.Fprintf(w, "    tasks   %s\n", strings.Join(marks, "  "))
		if r.status.Error != nil {
			fmt.Fprintf(w, "    error   %s\n", errorText(r.status.Error))
		} else {
			fmt.Fprintf(w, "    result  %s\n", orNull(r.status.Result))
		}
	}
	if ok {
		fmt.Fprintf(w, "\nAll %d runs ended as expected: %s of runs, %s in all.\n", len(runs), ran.Round(time.Millisecond), total.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "\nSome runs did not end as expected (marked ✗).\n")
	}
	return ok
}

// stopWithin calls a component's Stop with a bounded context.
func stopWithin(stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = stop(ctx) // the demo has said what it had to; a slow stop is no news
}
