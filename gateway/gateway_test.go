package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
)

// serveEcho is an HTTP worker: it takes echo@1 invocations through the
// gateway and completes each with its input, until stop closes.
func serveEcho(t *testing.T, b *bundle, stop <-chan struct{}, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			a := b.call(t, http.MethodPost, "tasks/echo/1/take?wait=1s", scopedWorker, "")
			if a.code == http.StatusNoContent {
				continue
			}
			if a.code != http.StatusOK {
				t.Errorf("take: %d %s", a.code, a.raw)
				return
			}
			lease := a.body["lease"].(string)
			inv := a.body["invocation"].(map[string]any)
			b.call(t, http.MethodPost, "leases/"+lease+"/heartbeat", scopedWorker, "").must(t, http.StatusOK)
			out, _ := json.Marshal(map[string]any{"output": map[string]any{"echo": inv["input"]}})
			b.call(t, http.MethodPost, "leases/"+lease+"/complete", scopedWorker, string(out)).must(t, http.StatusOK)
		}
	}()
}

func TestStartAndWaitServedByAnHTTPWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stop, wg := make(chan struct{}), &sync.WaitGroup{}
	serveEcho(t, b, stop, wg)
	defer wg.Wait()
	defer close(stop)

	a := b.call(t, http.MethodPost, "runs?wait=2m", appToken, `{"workflow":"echo","id":"e-1","input":{"n":7}}`).must(t, http.StatusOK)
	if a.body["status"] != "done" || a.body["run"] != "e-1" {
		t.Fatalf("start and wait: %s", a.raw)
	}
	if res, _ := json.Marshal(a.body["result"]); !strings.Contains(string(res), `"echo":{"n":7}`) {
		t.Fatalf("result %s does not hold the worker's output", res)
	}
	// The status and the listing say the same.
	s := b.call(t, http.MethodGet, "runs/e-1", observerToken, "").must(t, http.StatusOK)
	if s.body["status"] != "done" {
		t.Fatalf("status: %s", s.raw)
	}
	natstest.WaitFor(t, 2*time.Minute, "the run in the listing", func() error {
		l := b.call(t, http.MethodGet, "runs?workflow=echo&status=done", observerToken, "").must(t, http.StatusOK)
		runs, _ := l.body["runs"].([]any)
		if len(runs) != 1 || runs[0].(map[string]any)["run"] != "e-1" {
			return fmt.Errorf("listed %s", l.raw)
		}
		return nil
	})
}

func TestWaitDeadlineNamesTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.call(t, http.MethodPost, "runs?wait=1s", appToken, `{"workflow":"wait","id":"w-1"}`).must(t, http.StatusGatewayTimeout)
	if a.errCode() != "NOT_SETTLED" || a.errField("run") != "w-1" {
		t.Fatalf("deadline answer: %s", a.raw)
	}
	// The start was applied before the deadline passed, or soon after.
	natstest.WaitFor(t, 2*time.Minute, "the run to wait", func() error {
		s := b.call(t, http.MethodGet, "runs/w-1", observerToken, "")
		if s.code != http.StatusOK || s.body["status"] != "waiting" {
			return fmt.Errorf("%d %s", s.code, s.raw)
		}
		return nil
	})
	b.call(t, http.MethodPost, "runs/w-1/events/go", publisherTok, `{"ok":true}`).must(t, http.StatusAccepted)
	r := b.call(t, http.MethodGet, "runs/w-1/result?wait=2m", observerToken, "").must(t, http.StatusOK)
	if r.body["status"] != "done" {
		t.Fatalf("after the event: %s", r.raw)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.call(t, http.MethodPost, "runs", publisherTok, `{"workflow":"wait","id":"c-1"}`).must(t, http.StatusAccepted)
	// A cancel of a run with no record is refused, naming it.
	if a := b.call(t, http.MethodPost, "runs/nobody/cancel", publisherTok, ``).must(t, http.StatusNotFound); a.errCode() != "RUN_NOT_FOUND" {
		t.Fatalf("cancel of no run: %s", a.raw)
	}
	natstest.WaitFor(t, 2*time.Minute, "the run to exist", func() error {
		if s := b.call(t, http.MethodGet, "runs/c-1", observerToken, ""); s.code != http.StatusOK {
			return fmt.Errorf("%s", s.raw)
		}
		return nil
	})
	b.call(t, http.MethodPost, "runs/c-1/cancel", publisherTok, `{"reason":"test"}`).must(t, http.StatusAccepted)
	r := b.call(t, http.MethodGet, "runs/c-1/result?wait=2m", observerToken, "").must(t, http.StatusOK)
	if r.body["status"] != "cancelled" {
		t.Fatalf("after cancel: %s", r.raw)
	}
}

func TestAttemptDeadlineStillEnforced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"slow","id":"s-1"}`).must(t, http.StatusAccepted)
	var lease string
	natstest.WaitFor(t, 2*time.Minute, "an invocation of slow@1", func() error {
		a := b.call(t, http.MethodPost, "tasks/slow/1/take?wait=5s", workerToken, "")
		if a.code != http.StatusOK {
			return fmt.Errorf("take: %d %s", a.code, a.raw)
		}
		lease = a.body["lease"].(string)
		return nil
	})
	// The worker never completes: jetflow fails the attempt at its deadline.
	r := b.call(t, http.MethodGet, "runs/s-1/result?wait=2m", observerToken, "").must(t, http.StatusOK)
	if r.body["status"] != "failed" || !strings.Contains(r.raw, "no accepted result within its attemptTimeout of 2s") {
		t.Fatalf("a lent attempt past its deadline: %s", r.raw)
	}
	natstest.WaitFor(t, time.Minute, "the lease to expire", func() error {
		a := b.call(t, http.MethodPost, "leases/"+lease+"/complete", workerToken, `{"output":1}`)
		if a.code != http.StatusGone || a.errCode() != "LEASE_EXPIRED" || a.errField("run") != "s-1" {
			return fmt.Errorf("late completion: %d %s", a.code, a.raw)
		}
		return nil
	})
}
