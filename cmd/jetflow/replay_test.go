package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestHistoryAndReplay runs history and replay as processes against a
// finished run: its messages in order, an equal state, a divergence
// after the record is tampered with, restore after it is lost, and a
// refusal once its start is purged.
func TestHistoryAndReplay(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	const id = "hist-1"
	if err := f.Client.StartRun(ctx, "gate", id, map[string]any{"wait": true}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, id, wire.StatusWaiting)
	if err := f.Client.SendEvent(ctx, id, "go", map[string]any{"by": "test"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, id, wire.StatusDone)

	out, errOut, exit := verb(t, f, "history", id)
	t.Logf("history:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if exit != 0 || len(lines) != 3 {
		t.Fatalf("history: exit %d, %q %q", exit, out, errOut)
	}
	for i, want := range []string{"start   workflow=gate revision=g1 (the latest at its start) input=13B  | applied", "result  state=work task=echo@1 attempt=1 ok output={\"wait\":true}  | applied", `event   type=go payload={"by":"test"}  | applied`} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("history line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
	out, _, exit = verb(t, f, "history", id, "--json")
	var kinds []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Seq     uint64          `json:"seq"`
			Kind    string          `json:"kind"`
			Data    json.RawMessage `json:"data"`
			Verdict string          `json:"verdict"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Seq == 0 || len(m.Data) == 0 || m.Verdict != "applied" {
			t.Fatalf("history --json line %q: %v", l, err)
		}
		kinds = append(kinds, m.Kind)
	}
	if exit != 0 || strings.Join(kinds, ",") != "start,result,event" {
		t.Errorf("history --json: exit %d, kinds %v", exit, kinds)
	}
	if _, errOut, exit := verb(t, f, "history", "nobody"); exit != 1 || !strings.Contains(errOut, "no history for run nobody") {
		t.Errorf("history of an unknown run: exit %d, %q", exit, errOut)
	}

	out, errOut, exit = verb(t, f, "replay", id)
	if exit != 0 || out != "replay of "+id+": 3 messages, state equal\n" {
		t.Fatalf("replay: exit %d, %q %q", exit, out, errOut)
	}

	tamper(t, ctx, f, id)
	out, _, exit = verb(t, f, "replay", id)
	t.Logf("replay of a tampered record:\n%s", out)
	if exit != 1 || !strings.Contains(out, "state differs at /generation\n  saved:   1000\n  rebuilt: ") {
		t.Fatalf("replay of a tampered record: exit %d, %q", exit, out)
	}
	out, errOut, exit = verb(t, f, "replay", id, "--restore")
	if exit != 0 || !strings.Contains(out, "record restored (replaced") {
		t.Fatalf("replay --restore of a tampered record: exit %d, %q %q", exit, out, errOut)
	}
	if out, _, exit = verb(t, f, "replay", id); exit != 0 || !strings.HasSuffix(out, "state equal\n") {
		t.Fatalf("replay after restore: exit %d, %q", exit, out)
	}

	kv, err := f.JS.KeyValue(ctx, f.Names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, errOut, exit = verb(t, f, "replay", id); exit != 2 || !strings.Contains(errOut, "--restore") {
		t.Errorf("replay of a lost record: exit %d, %q", exit, errOut)
	}
	if out, errOut, exit = verb(t, f, "replay", id, "--restore"); exit != 0 || !strings.Contains(out, "record restored (created") {
		t.Fatalf("replay --restore of a lost record: exit %d, %q %q", exit, out, errOut)
	}
	if st, err := f.Client.Status(ctx, id); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("status after restore: %+v, %v", st, err)
	}

	stream, err := f.JS.Stream(ctx, f.Names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range f.Names.StoredStarts(id, provision.Partitions(stream.CachedInfo().Config)) {
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, exit = verb(t, f, "replay", id)
	t.Logf("replay after the start was purged: %s", errOut)
	if exit != 2 || !strings.Contains(errOut, "history trimmed: its start") {
		t.Errorf("replay after the start was purged: exit %d, %q %q", exit, out, errOut)
	}
	// What is left prints without verdicts, saying why.
	out, errOut, exit = verb(t, f, "history", id)
	t.Logf("history after the start was purged:\n%s%s", out, errOut)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); exit != 0 || len(lines) != 2 || strings.Contains(out, " | ") ||
		!strings.HasPrefix(errOut, "note: no verdicts: the history cannot be replayed: ") || !strings.Contains(errOut, "history trimmed: its start") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("history after the start was purged: exit %d, %q %q", exit, out, errOut)
	}
}

// tamper sets the saved state's generation to 1000.
func tamper(t *testing.T, ctx context.Context, f *fleet.Fleet, id string) {
	t.Helper()
	data, rev, err := f.Runs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(rec.State, &st); err != nil {
		t.Fatal(err)
	}
	st["generation"] = 1000
	if rec.State, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if data, err = rec.Encode(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Runs.Update(ctx, id, data, rev); err != nil {
		t.Fatal(err)
	}
}

func TestHistoryAndReplayHelpAndArguments(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"history", "replay"} {
		if out, _, exit := runEnv(t, nil, "", verb, "--help"); exit != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "--nats") {
			t.Errorf("%s --help: exit %d, %q", verb, exit, out)
		}
		if _, errOut, exit := runEnv(t, nil, "", verb); exit != 2 || !strings.Contains(errOut, "missing argument RUN") {
			t.Errorf("%s without RUN: exit %d, %q", verb, exit, errOut)
		}
		if _, errOut, exit := runEnv(t, nil, "", verb, "a.b"); exit != 2 || !strings.Contains(errOut, "argument RUN") {
			t.Errorf("%s a.b: exit %d, %q", verb, exit, errOut)
		}
	}
}
