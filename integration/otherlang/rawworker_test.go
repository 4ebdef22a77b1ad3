package otherlang

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// rawWorker serves task versions with core NATS requests only, exactly as
// docs/PROTOCOL.md tells a worker in another language to: pull from the
// task's durable consumer through $JS.API.CONSUMER.MSG.NEXT, heartbeat
// with +WPI, publish the result as a JetStream publish (a request answered
// by a PubAck), then +ACK as a request. It records every exchange for the
// capture.
type rawWorker struct {
	t      *testing.T
	nc     *nats.Conn
	prefix string
	log    *transcript
	// run computes a task's output, or a task error as the wire's error
	// object.
	run func(inv map[string]any) (output any, taskErr map[string]any)
}

// serve pulls invocations of consumer until ctx ends.
func (w *rawWorker) serve(ctx context.Context, consumer string, wg *sync.WaitGroup) {
	defer wg.Done()
	inbox := w.nc.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		w.t.Errorf("subscribe %s: %v", inbox, err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	next := "$JS.API.CONSUMER.MSG.NEXT." + w.prefix + "_tasks." + consumer
	// A short pull, so that stopping waits at most this long.
	pull := []byte(`{"batch":1,"expires":500000000}`)
	first := true
	for ctx.Err() == nil {
		if err := w.nc.PublishRequest(next, inbox, pull); err != nil {
			w.t.Errorf("pull %s: %v", consumer, err)
			return
		}
		if first {
			w.log.add("worker → pull request", next, inbox, nil, pull)
			first = false
		}
		for {
			m, err := sub.NextMsg(time.Second)
			if err != nil {
				if !errors.Is(err, nats.ErrTimeout) {
					w.t.Errorf("pull %s: %v", consumer, err)
					return
				}
				break // the pull's end was lost; pull again
			}
			if status := m.Header.Get("Status"); status != "" && len(m.Data) == 0 {
				if status == "100" {
					continue // idle heartbeat
				}
				break // 404 / 408: this pull is over
			}
			w.handle(ctx, m)
			break
		}
	}
}

func (w *rawWorker) handle(ctx context.Context, m *nats.Msg) {
	w.log.add("worker ← invocation (ack subject in Reply)", m.Subject, m.Reply, m.Header, m.Data)
	var inv map[string]any
	if err := json.Unmarshal(m.Data, &inv); err != nil || inv["activation"] == nil || inv["reply"] == nil {
		reason := "malformed invocation: body is not a JSON invocation object"
		w.ack(m, "+TERM "+reason)
		return
	}
	w.ack(m, "+WPI") // a heartbeat; a real worker repeats it every ack_wait/3
	out, taskErr := w.run(inv)
	result := map[string]any{
		"activation": inv["activation"], "node": inv["node"], "attempt": inv["attempt"], "token": inv["token"],
	}
	if taskErr != nil {
		result["error"] = taskErr
	} else {
		result["output"] = out
	}
	body, err := json.Marshal(result)
	if err != nil {
		w.t.Errorf("encode result: %v", err)
		return
	}
	msg := nats.NewMsg(inv["reply"].(string))
	msg.Data = body
	tok, _ := inv["token"].(string)
	sum := sha256.Sum256([]byte(tok))
	msg.Header.Set("Nats-Msg-Id", "result/"+hex.EncodeToString(sum[:]))
	msg.Header.Set("Nats-Expected-Stream", w.prefix+"_inputs")
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ack, err := w.nc.RequestMsgWithContext(rctx, msg)
	if err != nil {
		w.t.Errorf("publish result: %v", err)
		return
	}
	w.log.add("worker → result (JetStream publish)", msg.Subject, "", msg.Header, body)
	w.log.add("worker ← PubAck", "", "", nil, ack.Data)
	if strings.Contains(string(ack.Data), `"error"`) {
		w.t.Errorf("result refused: %s", ack.Data)
		return
	}
	w.ack(m, "+ACK")
}

// ack sends an acknowledgement body to m's ack subject as a request; the
// server confirms +ACK and +TERM with an empty reply.
func (w *rawWorker) ack(m *nats.Msg, body string) {
	w.log.add("worker → ack", m.Reply, "", nil, []byte(body))
	if body == "+WPI" {
		if err := w.nc.Publish(m.Reply, []byte(body)); err != nil {
			w.t.Errorf("%s: %v", body, err)
		}
		return
	}
	if _, err := w.nc.Request(m.Reply, []byte(body), 5*time.Second); err != nil {
		w.t.Errorf("%s: %v", body, err)
	}
}

// transcript records messages in the order they were seen.
type transcript struct {
	mu      sync.Mutex
	entries []entry
}

type entry struct {
	what, subject, reply string
	header               nats.Header
	data                 []byte
}

func (tr *transcript) add(what, subject, reply string, h nats.Header, data []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var hc nats.Header
	if len(h) > 0 {
		hc = nats.Header{}
		for k, v := range h {
			hc[k] = append([]string(nil), v...)
		}
	}
	tr.entries = append(tr.entries, entry{what, subject, reply, hc, append([]byte(nil), data...)})
}

// tap records every message on subjects (core subscriptions).
func (tr *transcript) tap(t *testing.T, nc *nats.Conn, subjects ...string) {
	for _, s := range subjects {
		sub, err := nc.Subscribe(s, func(m *nats.Msg) { tr.add("seen", m.Subject, m.Reply, m.Header, m.Data) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	for _, e := range tr.entries {
		fmt.Fprintf(&b, "=== %s", e.what)
		if e.subject != "" {
			fmt.Fprintf(&b, " subject=%s", e.subject)
		}
		if e.reply != "" {
			fmt.Fprintf(&b, " reply=%s", e.reply)
		}
		b.WriteString("\n")
		for _, k := range slices.Sorted(maps.Keys(e.header)) {
			for _, v := range e.header[k] {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
		fmt.Fprintf(&b, "%s\n", e.data)
	}
	return b.String()
}
