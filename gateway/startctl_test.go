package gateway_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
)

// Two starts with one idempotency key at once start one run: both answer
// it, one of them as a duplicate; the header works as the member does.
func TestIdempotencyKeyStartsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","idempotencyKey":"order-77"}`)
		}()
	}
	wg.Wait()
	a, c := answers[0].must(t, http.StatusAccepted), answers[1].must(t, http.StatusAccepted)
	if a.body["run"] != c.body["run"] || a.body["duplicate"] == c.body["duplicate"] {
		t.Fatalf("two starts with one key: %s and %s", a.raw, c.raw)
	}
	run := a.body["run"].(string)
	natstest.WaitFor(t, 2*time.Minute, "the run to wait", func() error {
		if s := b.call(t, http.MethodGet, "runs/"+run, observerToken, ""); s.body["status"] != "waiting" {
			return fmt.Errorf("%s", s.raw)
		}
		return nil
	})
	// A later repeat starts nothing: its own id has no run.
	d := b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","idempotencyKey":"order-77","id":"another"}`).must(t, http.StatusAccepted)
	if d.body["run"] != run || d.body["duplicate"] != true {
		t.Fatalf("a later repeat: %s", d.raw)
	}
	if s := b.call(t, http.MethodGet, "runs/another", observerToken, ""); s.code != http.StatusNotFound {
		t.Fatalf("the repeat's own id was started: %s", s.raw)
	}
}

// Of two starts with one singleton key at once, one starts and the other
// is refused naming it; once it settles, the key is free again.
func TestSingletonRefusesASecondActiveRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = b.call(t, http.MethodPost, "runs", appToken, fmt.Sprintf(`{"workflow":"wait","id":"s-%d","singleton":"customer-ada"}`, i))
		}()
	}
	wg.Wait()
	won, lost := answers[0], answers[1]
	if won.code != http.StatusAccepted {
		won, lost = lost, won
	}
	won.must(t, http.StatusAccepted)
	lost.must(t, http.StatusConflict)
	holder := won.body["run"].(string)
	if lost.errCode() != "SINGLETON_ACTIVE" || lost.errField("run") != holder || lost.errField("pointer") != "/singleton" {
		t.Fatalf("the second start: %s", lost.raw)
	}
	natstest.WaitFor(t, 2*time.Minute, "the holder to wait", func() error {
		if s := b.call(t, http.MethodGet, "runs/"+holder, observerToken, ""); s.body["status"] != "waiting" {
			return fmt.Errorf("%s", s.raw)
		}
		return nil
	})
	b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","id":"s-2","singleton":"customer-ada"}`).must(t, http.StatusConflict)
	b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","id":"s-3","singleton":"customer-bo"}`).must(t, http.StatusAccepted)
	b.call(t, http.MethodPost, "runs/"+holder+"/cancel", appToken, "").must(t, http.StatusAccepted)
	b.call(t, http.MethodGet, "runs/"+holder+"/result?wait=2m", appToken, "").must(t, http.StatusOK)
	b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","id":"s-4","singleton":"customer-ada"}`).must(t, http.StatusAccepted)
}

// A queued start waits for the active run of its key and starts once it
// settles; of a debounced burst only the last start runs.
func TestSingletonQueueAndDebounce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","id":"q-1","singleton":"acct","singletonMode":"queue"}`).must(t, http.StatusAccepted)
	q := b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","id":"q-2","singleton":"acct","singletonMode":"queue"}`).must(t, http.StatusAccepted)
	if q.body["run"] != "q-2" || q.body["decision"] != "queued" || q.body["because"] != "q-1" {
		t.Fatalf("the queued start: %s", q.raw)
	}
	b.call(t, http.MethodPost, "runs/q-1/cancel", appToken, "").must(t, http.StatusAccepted)
	natstest.WaitFor(t, 2*time.Minute, "the queued run to wait", func() error {
		if s := b.call(t, http.MethodGet, "runs/q-2", observerToken, ""); s.body["status"] != "waiting" {
			return fmt.Errorf("%s", s.raw)
		}
		return nil
	})
	for _, id := range []string{"d-1", "d-2"} {
		d := b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","id":"`+id+`","debounce":{"key":"doc","ms":500}}`).must(t, http.StatusAccepted)
		if d.body["decision"] != "debounced" || d.body["due"] == nil {
			t.Fatalf("debounced start %s: %s", id, d.raw)
		}
	}
	natstest.WaitFor(t, 2*time.Minute, "the last debounced run to wait", func() error {
		if s := b.call(t, http.MethodGet, "runs/d-2", observerToken, ""); s.body["status"] != "waiting" {
			return fmt.Errorf("%s", s.raw)
		}
		return nil
	})
	if s := b.call(t, http.MethodGet, "runs/d-1", observerToken, ""); s.code != http.StatusNotFound {
		t.Fatalf("the replaced start ran: %s", s.raw)
	}
	e := b.call(t, http.MethodPost, "runs", appToken, `{"workflow":"wait","debounce":{"key":"doc","ms":0}}`).must(t, http.StatusBadRequest)
	if e.errField("pointer") != "/debounce" {
		t.Fatalf("a debounce without a delay: %s", e.raw)
	}
}
