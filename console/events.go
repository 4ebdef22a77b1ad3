package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/jetflow/jetflow/subjects"
)

// Event streams tell open pages what changed, as server-sent events fed
// by the index (itself fed by the run bucket's KV watch). Changes are
// coalesced for coalesceDelay and capped at maxEventRuns summaries per
// event, so a busy fleet costs each page a few small events a second.
const (
	coalesceDelay = 250 * time.Millisecond
	maxEventRuns  = 200
	pingEvery     = 15 * time.Second
	// streamFor ends a stream after a while; the browser reconnects at
	// once, and a server shutting down is never held up for long.
	streamFor = 10 * time.Minute
)

// runsEvent is the data of a "runs" event.
type runsEvent struct {
	Version uint64    `json:"version"`
	Runs    []Summary `json:"runs"`
	// Removed are runs deleted from the bucket.
	Removed []string `json:"removed,omitempty"`
	// More says changes were left out: reload what is shown.
	More   bool   `json:"more,omitempty"`
	Counts Counts `json:"counts"`
}

func (c *Console) apiEvents(w http.ResponseWriter, r *http.Request) {
	only := r.URL.Query().Get("run")
	if only != "" {
		if err := subjects.CheckRunID(only); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "this server cannot stream events")
		return
	}
	c.onShutdown(r)
	startEventStream(w)
	version, changed := c.idx.watch()
	fmt.Fprintf(w, "retry: 1000\nevent: hello\ndata: %s\n\n", mustJSON(map[string]any{"version": version, "counts": c.idx.counts()}))
	flusher.Flush()

	ctx := r.Context()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	end := time.NewTimer(streamFor)
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.closing:
			return
		case <-end.C:
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			flusher.Flush()
			continue
		case <-changed:
		}
		// Let a burst of changes gather into one event.
		wait := time.NewTimer(coalesceDelay)
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-c.closing:
			wait.Stop()
			return
		case <-wait.C:
		}
		var ids []string
		var complete bool
		version, ids, complete = c.idx.since(version)
		_, changed = c.idx.watch()
		ev := runsEvent{Version: version, Runs: []Summary{}, More: !complete}
		for _, id := range ids {
			if only != "" && id != only {
				continue
			}
			if len(ev.Runs)+len(ev.Removed) >= maxEventRuns {
				ev.More = true
				break
			}
			if s, ok := c.idx.get(id); ok {
				ev.Runs = append(ev.Runs, s)
			} else {
				ev.Removed = append(ev.Removed, id)
			}
		}
		if only != "" && len(ev.Runs) == 0 && len(ev.Removed) == 0 && !ev.More {
			continue
		}
		ev.Counts = c.idx.counts()
		fmt.Fprintf(w, "event: runs\ndata: %s\n\n", mustJSON(ev))
		flusher.Flush()
	}
}

// onShutdown closes the console's streams when the server serving r
// shuts down: http.Server.Shutdown waits for open requests, and an event
// stream would otherwise keep it waiting.
func (c *Console) onShutdown(r *http.Request) {
	srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	if !ok {
		return
	}
	if _, loaded := c.servers.LoadOrStore(srv, struct{}{}); !loaded {
		srv.RegisterOnShutdown(func() { c.stopOnce.Do(func() { close(c.closing) }) })
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// startEventStream answers a request with a stream of server-sent events
// that no cache or proxy holds back.
func startEventStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}
