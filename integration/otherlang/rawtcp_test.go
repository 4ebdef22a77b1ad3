package otherlang

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
)

// rawConn speaks the NATS client protocol over a bare TCP socket, as a
// worker written from PROTOCOL.md alone would: nothing of nats.go.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

// rawMsg is one MSG or HMSG the server sent.
type rawMsg struct {
	Subject, Sid, Reply string
	Header, Data        string
}

// status is the status code of a message with no body ("408"), or "".
func (m rawMsg) status() string {
	first, _, _ := strings.Cut(m.Header, "\r\n")
	if f := strings.Fields(first); len(f) >= 2 && f[0] == "NATS/1.0" && m.Data == "" {
		return f[1]
	}
	return ""
}

func dialRaw(t *testing.T, natsURL string) *rawConn {
	t.Helper()
	u, err := url.Parse(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	if line := rc.line(); !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("the server opened with %q, not INFO", line)
	}
	rc.send(`CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1,"lang":"raw","version":"0"}` + "\r\nPING\r\n")
	if line := rc.line(); line != "PONG" {
		t.Fatalf("CONNECT answered %q", line)
	}
	return rc
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if err := rc.c.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		rc.t.Fatal(err)
	}
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) pub(subject, reply, body string) {
	if reply != "" {
		subject += " " + reply
	}
	rc.send(fmt.Sprintf("PUB %s %d\r\n%s\r\n", subject, len(body), body))
}

func (rc *rawConn) line() string {
	rc.t.Helper()
	if err := rc.c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		rc.t.Fatal(err)
	}
	l, err := rc.r.ReadString('\n')
	if err != nil {
		rc.t.Fatalf("reading from the server: %v", err)
	}
	return strings.TrimRight(l, "\r\n")
}

// next returns the next MSG or HMSG, answering the server's PINGs.
func (rc *rawConn) next() rawMsg {
	rc.t.Helper()
	for {
		l := rc.line()
		f := strings.Fields(l)
		switch {
		case l == "PING":
			rc.send("PONG\r\n")
			continue
		case len(f) == 0 || l == "PONG" || f[0] == "+OK" || f[0] == "INFO":
			continue
		case f[0] == "MSG" && (len(f) == 4 || len(f) == 5):
			m := rawMsg{Subject: f[1], Sid: f[2]}
			if len(f) == 5 {
				m.Reply = f[3]
			}
			m.Data = rc.payload(f[len(f)-1])
			return m
		case f[0] == "HMSG" && (len(f) == 5 || len(f) == 6):
			m := rawMsg{Subject: f[1], Sid: f[2]}
			if len(f) == 6 {
				m.Reply = f[3]
			}
			hdr, _ := strconv.Atoi(f[len(f)-2])
			all := rc.payload(f[len(f)-1])
			m.Header, m.Data = all[:hdr], all[hdr:]
			return m
		}
		rc.t.Fatalf("unexpected line from the server: %q", l)
	}
}

// payload reads a message's size bytes and the CRLF after them.
func (rc *rawConn) payload(size string) string {
	rc.t.Helper()
	n, err := strconv.Atoi(size)
	if err != nil {
		rc.t.Fatalf("size %q: %v", size, err)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(rc.r, buf); err != nil {
		rc.t.Fatal(err)
	}
	return string(buf[:n])
}

// TestRawPullOnTheWire pulls one invocation over a bare socket, with only
// what PROTOCOL.md §5.2 says, and checks what the document claims of the
// wire: the invocation arrives on the pull's own subscription (its sid)
// but its MSG line names the task subject, not the inbox, so a worker
// routes by sid; its reply subject is the ack subject; and a pull that
// its batch filled ends with that message: no status message follows
// for it (a later pull's 408 is the next thing on the inbox).
func TestRawPullOnTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startFleet(t, ctx, provision.TaskPolicy{})
	const shipOnly = `{"$workflow":"0.2","revision":"s1","initial":"ship","states":{
 "ship":{"work":{"task":"ship","version":"1"},"then":"done"},"done":{"final":true}}}`
	if _, err := f.Deploy(ctx, "ship-only", []byte(shipOnly)); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.StartRun(ctx, "ship-only", "raw-1", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const info = "$JS.API.CONSUMER.INFO.jetflow_tasks.task_ship_1"
	consumer := func() (pending, waiting int) {
		m, err := nc.Request(info, nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ci struct {
			NumPending int `json:"num_pending"`
			NumWaiting int `json:"num_waiting"`
		}
		if err := json.Unmarshal(m.Data, &ci); err != nil {
			t.Fatal(err)
		}
		return ci.NumPending, ci.NumWaiting
	}
	natstest.WaitFor(t, 30*time.Second, "the invocation in the task stream", func() error {
		if p, _ := consumer(); p != 1 {
			return fmt.Errorf("%d pending", p)
		}
		return nil
	})

	rc := dialRaw(t, f.URL())
	rc.send("SUB _INBOX.raw.pull 7\r\n")
	const next = "$JS.API.CONSUMER.MSG.NEXT.jetflow_tasks.task_ship_1"
	// 1 s: time for a loaded server to fill it (a pull of 1 ms can expire
	// before the server's delivery loop runs, and end with a 408 instead),
	// and long over when the second pull ends.
	rc.pub(next, "_INBOX.raw.pull", `{"batch":1,"expires":1000000000}`)
	inv := rc.next()
	if inv.Subject != "jetflow.task.ship.1" || inv.Sid != "7" || !strings.HasPrefix(inv.Reply, "$JS.ACK.jetflow_tasks.task_ship_1.") {
		t.Fatalf("the invocation came as subject %q sid %s reply %q header %q; want the task subject on the pull's sid with the ack subject as reply", inv.Subject, inv.Sid, inv.Reply, inv.Header)
	}
	var body struct{ Run, Node string }
	if err := json.Unmarshal([]byte(inv.Data), &body); err != nil || body.Run != "raw-1" || body.Node != "task" {
		t.Fatalf("invocation body %q: %v", inv.Data, err)
	}
	if _, waiting := consumer(); waiting != 0 {
		t.Errorf("the filled pull still waits on the server (%d waiting)", waiting)
	}
	// A second pull, with nothing left to deliver, ends with 408 when it
	// expires (5 s); the first expired 4 s before. Were a filled pull to
	// end with a status too, it would come first.
	rc.pub(next, "_INBOX.raw.pull", `{"batch":1,"expires":5000000000}`)
	end := rc.next()
	if end.Sid != "7" || end.status() != "408" || end.Subject != "_INBOX.raw.pull" {
		t.Errorf("after the filled pull came %+v; want the second pull's 408 on the inbox itself", end)
	}
	t.Logf("invocation: HMSG %s %s %s; then: HMSG %s %s %q", inv.Subject, inv.Sid, inv.Reply, end.Subject, end.Sid, end.Header)
	rc.pub(inv.Reply, "", "+ACK") // leave nothing in flight
}
