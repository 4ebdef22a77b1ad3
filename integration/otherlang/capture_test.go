package otherlang

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
)

var capture = flag.String("capture", "", "write the transcript of the raw-protocol run to this file (the worked examples of docs/PROTOCOL.md come from it)")

// reminder waits for a ping for one second, so that the capture sees a
// timer armed, fired and applied.
// fragile fails when its one task fails for good.
const fragile = `{"$workflow":"0.2","revision":"fragile-1","initial":"send","states":{
 "send":{"work":{"task":"notify","version":"1"},"then":"sent"},"sent":{"final":true}}}`

const reminder = `{"$workflow":"0.2","revision":"reminder-1","initial":"wait","states":{
 "wait":{"on":[{"event":"ping","to":"pinged"}],"after":{"ms":1000,"to":"late"}},
 "pinged":{"final":true},"late":{"final":true}}}`

// orderTask is the order workflow's tasks as the raw worker runs them; the
// first attempt of score-fraud fails so that a retry is seen.
func orderTask(inv map[string]any) (any, map[string]any) {
	with, _ := inv["with"].(map[string]any)
	switch inv["task"] {
	case "check-stock":
		return map[string]any{"available": with["qty"].(float64) <= 10}, nil
	case "quote-price":
		return map[string]any{"total": with["qty"].(float64) * 4.5}, nil
	case "score-fraud":
		if inv["attempt"].(float64) == 1 {
			return nil, map[string]any{"message": "fraud service timed out", "code": "UPSTREAM_TIMEOUT"}
		}
		return map[string]any{"score": 0.1}, nil
	case "ship":
		return map[string]any{"tracking": "T-1"}, nil
	case "notify":
		if in, _ := inv["input"].(map[string]any); in["fail"] == true {
			return nil, map[string]any{"message": "mailbox unavailable", "code": "MAILBOX_GONE", "nonRetryable": true}
		}
		return map[string]any{"notified": true}, nil
	}
	return nil, map[string]any{"message": fmt.Sprintf("unknown task %v", inv["task"]), "nonRetryable": true}
}

// TestRawProtocolWorker runs the order workflow with a worker that speaks
// the protocol with plain NATS requests (no jetflow code, no JetStream
// API), publishes the event, cancel and start messages the same way, and
// checks the outcomes. With -capture it writes everything it saw.
func TestRawProtocolWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startFleet(t, ctx, provision.TaskPolicy{})
	nc, err := nats.Connect(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tr := &transcript{}
	tr.tap(t, nc, "jetflow.>", "$JS.ACK.jetflow_tasks.>", "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>")

	if _, err := f.Deploy(ctx, "order", readRepoFile(t, "examples/order.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Deploy(ctx, "reminder", []byte(reminder)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Deploy(ctx, "fragile", []byte(fragile)); err != nil {
		t.Fatal(err)
	}
	extra := map[string][]byte{}
	info, err := nc.Request("$JS.API.CONSUMER.INFO.jetflow_tasks.task_check-stock_1", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	extra["consumer info"] = info.Data

	// A malformed invocation, which the worker must terminate.
	if _, err := f.JS.Publish(ctx, "jetflow.task.notify.1", []byte(`{"hello":"world"}`)); err != nil {
		t.Fatal(err)
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w := &rawWorker{t: t, nc: nc, prefix: "jetflow", log: tr, run: orderTask}
	for _, c := range []string{"task_check-stock_1", "task_quote-price_1", "task_score-fraud_1", "task_ship_1", "task_notify_1"} {
		wg.Add(1)
		go w.serve(wctx, c, &wg)
	}
	defer func() { stopWorkers(); wg.Wait() }()

	publish := func(subject, msgID string, body []byte) {
		t.Helper()
		m := nats.NewMsg(subject)
		m.Data = body
		if msgID != "" {
			m.Header.Set(wire.HeaderMsgID, msgID)
		}
		ack, err := nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		tr.add("PubAck of "+subject, "", "", nil, ack.Data)
	}
	waitStatus := func(runID, status string) {
		t.Helper()
		natstest.WaitFor(t, 30*time.Second, runID+" "+status, func() error {
			st, err := f.Client.Status(ctx, runID)
			if err != nil {
				return err
			}
			if st.Status != status {
				return fmt.Errorf("status %s", st.Status)
			}
			return nil
		})
	}
	record := func(runID string) []byte {
		t.Helper()
		msg, err := nc.Request("$JS.API.DIRECT.GET.KV_jetflow_runs.$KV.jetflow_runs."+runID, nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return msg.Data
	}

	// order-1001: start, tasks (one retried), wait, payment, done.
	publish("jetflow.in.order-1001.start", "start/order-1001/S5XZ4LQ2K7MWPBJ3VNC6HD2T4E", []byte(`{"workflow":"order","input":{"sku":"tea","qty":2,"customer":"c-7"}}`))
	waitStatus("order-1001", "waiting")
	extra["record order-1001 waiting"] = record("order-1001")
	publish("jetflow.in.order-1001.event.payment", "event/order-1001/pay-7781-q9f2x8", []byte(`{"amount":9,"method":"card"}`))
	st, err := f.Client.Wait(ctx, "order-1001")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != wire.StatusDone || st.State != "/states/done" {
		t.Fatalf("order-1001 ended %+v", st)
	}
	extra["record order-1001 done"] = record("order-1001")
	// A retry of the same start (same id) within the duplicate window:
	// stored once.
	publish("jetflow.in.order-1001.start", "start/order-1001/S5XZ4LQ2K7MWPBJ3VNC6HD2T4E", []byte(`{"workflow":"order","input":{"sku":"tea","qty":2,"customer":"c-7"}}`))

	// order-1002: cancelled while it waits.
	publish("jetflow.in.order-1002.start", "start/order-1002/B4KX7ZP3QW2MRC6JN5TD8HLV2E", []byte(`{"workflow":"order","input":{"sku":"mug","qty":1,"customer":"c-9"}}`))
	waitStatus("order-1002", "waiting")
	publish("jetflow.in.order-1002.cancel", "cancel/order-1002/7QJ3M2XK5RZP4WD6NC2HB8LTVA", []byte(`{"reason":"customer changed their mind"}`))
	if st, err := f.Client.Wait(ctx, "order-1002"); err != nil || st.Status != wire.StatusCancelled {
		t.Fatalf("order-1002 ended %+v, %v", st, err)
	}

	// fragile-1: a task fails for good and so does the run.
	publish("jetflow.in.fragile-1.start", "start/fragile-1/M3TQ8ZK2XW5RJC4PN7BD6HLV9A", []byte(`{"workflow":"fragile","input":{"fail":true}}`))
	if st, err := f.Client.Wait(ctx, "fragile-1"); err != nil || st.Status != wire.StatusFailed {
		t.Fatalf("fragile-1 ended %+v, %v", st, err)
	}

	// remind-1: a timer fires.
	publish("jetflow.in.remind-1.start", "start/remind-1/R2VX6ZK8QW3MTC5JN4PD7HLB2E", []byte(`{"workflow":"reminder"}`))
	if st, err := f.Client.Wait(ctx, "remind-1"); err != nil || st.Status != wire.StatusDone || st.State != "/states/late" {
		t.Fatalf("remind-1 ended %+v, %v", st, err)
	}
	// An event the run no longer waits for: recorded as rejected.
	publish("jetflow.in.remind-1.event.ping", "", nil)
	natstest.WaitFor(t, 10*time.Second, "the late ping is recorded as rejected", func() error {
		if !strings.Contains(string(record("remind-1")), `"rejected"`) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	extra["record remind-1"] = record("remind-1")
	// The scheduler stores the fired timer without a publish that core
	// subscribers would see: read it back from the stream.
	fired, err := nc.Request("$JS.API.DIRECT.GET.jetflow_inputs", []byte(`{"last_by_subj":"jetflow.in.remind-1.timer"}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tr.add("direct get of the fired timer", "", "", fired.Header, fired.Data)
	index, err := nc.Request("$JS.API.DIRECT.GET.KV_jetflow_workflows.$KV.jetflow_workflows.name.order", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tr.add("direct get of the workflow bucket's name.order", "", "", index.Header, index.Data)

	stopWorkers()
	wg.Wait()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	text := tr.String()
	if !strings.Contains(text, "+TERM malformed invocation") || !strings.Contains(text, `"attempt":2`) {
		t.Errorf("the transcript lacks the terminated invocation or the retried attempt")
	}
	if *capture != "" {
		var b strings.Builder
		b.WriteString(text)
		for _, k := range []string{"consumer info", "record order-1001 waiting", "record order-1001 done", "record remind-1"} {
			var pretty any
			if err := json.Unmarshal(extra[k], &pretty); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			p, _ := json.MarshalIndent(pretty, "", "  ")
			fmt.Fprintf(&b, "=== %s\n%s\n%s\n", k, extra[k], p)
		}
		if err := os.WriteFile(*capture, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
