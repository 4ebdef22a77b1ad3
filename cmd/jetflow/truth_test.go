package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// These tests check that the client verbs say what is true of a run, in
// the words of its document: states, tasks, revisions, times.

// stampRE is the CLI's one time format: RFC 3339, UTC, milliseconds.
const stampRE = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`

// twoStepDoc runs the echo task in two states, whose DAGs both call
// their node "task".
const twoStepDoc = `{"$workflow":"0.2","revision":"two-1","initial":"ship","states":{
 "ship":{"work":{"task":"echo","version":"1"},"then":"notify"},
 "notify":{"work":{"task":"echo","version":"1"},"then":"end"},
 "end":{"final":true}}}`

// timerDoc waits for an event or ten minutes.
const timerDoc = `{"$workflow":"0.2","revision":"t1","initial":"hold","states":{
 "hold":{"on":[{"event":"go","to":"end"}],"after":{"ms":600000,"to":"end"}},
 "end":{"final":true}}}`

func TestHistoryNamesStatesTasksAndRevision(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if _, err := f.Deploy(ctx, "two", []byte(twoStepDoc)); err != nil {
		t.Fatal(err)
	}
	if _, _, exit := verb(t, f, "start", "two", "--id", "two-a", "--input", `{"n":1}`); exit != 0 {
		t.Fatal("start failed")
	}
	waitStatus(t, f, "two-a", wire.StatusDone)
	out, errOut, exit := verb(t, f, "history", "two-a")
	t.Logf("history:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if exit != 0 || len(lines) != 3 {
		t.Fatalf("history: exit %d, %q %q", exit, out, errOut)
	}
	for i, want := range []string{
		`^` + stampRE + `\s+\d+  start   workflow=two revision=two-1 \(the latest at its start\) input=7B  \| applied$`,
		`  result  state=ship task=echo@1 attempt=1 ok output=\{"n":1\}  \| applied$`,
		`  result  state=notify task=echo@1 attempt=1 ok output=\{"n":1\}  \| applied$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("history line %d = %q, want it to match %q", i, lines[i], want)
		}
	}
	out, _, _ = verb(t, f, "history", "two-a", "--json")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct{ Kind, Time, Revision, State, Task string }
		if err := json.Unmarshal([]byte(l), &m); err != nil || !regexp.MustCompile(`^`+stampRE+`$`).MatchString(m.Time) {
			t.Fatalf("history --json line %q: %v", l, err)
		}
		got = append(got, m.Kind+":"+m.Revision+m.State+":"+m.Task)
	}
	if want := "start:two-1:,result:/states/ship:echo@1,result:/states/notify:echo@1"; strings.Join(got, ",") != want {
		t.Errorf("history --json names %q, want %q", strings.Join(got, ","), want)
	}
}

func TestStatusShowsTimersInOneTimeFormat(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if _, err := f.Deploy(ctx, "timer", []byte(timerDoc)); err != nil {
		t.Fatal(err)
	}
	if _, _, exit := verb(t, f, "start", "timer", "--id", "tm-1"); exit != 0 {
		t.Fatal("start failed")
	}
	waitStatus(t, f, "tm-1", wire.StatusWaiting)
	out, _, exit := verb(t, f, "status", "tm-1")
	t.Logf("status:\n%s", out)
	for _, want := range []string{
		`(?m)^timers    ` + stampRE + ` \(in (10m0s|9m\d+s)\): the wait in hold takes its after branch$`,
		`(?m)^started   ` + stampRE + ` \((\d+s ago|now)\)$`,
		`(?m)^updated   ` + stampRE + ` \((\d+s ago|now)\)$`,
	} {
		if exit != 0 || !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	updated := regexp.MustCompile(`(?m)^updated   (` + stampRE + `)`).FindStringSubmatch(out)
	list, _, _ := verb(t, f, "list")
	if updated == nil || !regexp.MustCompile(`(?m)^tm-1\s+timer@t1\s+waiting\s+hold\s+`+regexp.QuoteMeta(updated[1])+` \(`).MatchString(list) {
		t.Errorf("list does not show the update time status shows (%v):\n%s", updated, list)
	}
	out, _, _ = verb(t, f, "status", "tm-1", "--json")
	var st struct {
		Updated string
		Timers  []struct{ Kind, At, State string }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Timers) != 1 || st.Timers[0].Kind != "wait" || st.Timers[0].State != "hold" ||
		!regexp.MustCompile(`^`+stampRE+`$`).MatchString(st.Timers[0].At) || updated == nil || st.Updated != updated[1] {
		t.Errorf("status --json: %v, %s", err, out)
	}
}

// TestStatusNamesTasksInFlight: a single-task state's attempt is named by
// its task, not by its DAG's node "task".
func TestStatusNamesTasksInFlight(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	if _, _, exit := verb(t, f, "start", "cat", "--id", "tf-1"); exit != 0 { // no worker serves cat
		t.Fatal("start failed")
	}
	waitStatus(t, f, "tf-1", wire.StatusRunning)
	out, _, exit := verb(t, f, "status", "tf-1")
	if exit != 0 || !regexp.MustCompile(`(?m)^tasks     cat@1 \(attempt 1\)$`).MatchString(out) {
		t.Errorf("status of a run in flight:\n%s", out)
	}
}

func TestEventWaitSaysWhatTheEventDid(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	if _, _, exit := verb(t, f, "start", "gate", "--id", "ew-1", "--input", `{"wait":true}`); exit != 0 {
		t.Fatal("start failed")
	}
	waitStatus(t, f, "ew-1", wire.StatusWaiting)
	out, errOut, exit := verb(t, f, "event", "ew-1", "stop", "--wait")
	if exit != 1 || out != "sent stop to run ew-1\nignored: event \"stop\" matched no transition: the run waits in /states/gate for \"go\"\n" {
		t.Errorf("an event the run ignores: exit %d, %q %q", exit, out, errOut)
	}
	out, errOut, exit = verb(t, f, "event", "ew-1", "go", "--wait")
	if exit != 0 || out != "sent go to run ew-1\nmoved: it took the transition from gate to end; the run is done\n" {
		t.Errorf("an event the run takes: exit %d, %q %q", exit, out, errOut)
	}
	if _, errOut, exit := verb(t, f, "event", "ew-1", "go", "--wait", "--before-start"); exit == 0 || !strings.Contains(errOut, "--wait and --before-start") {
		t.Errorf("--wait with --before-start: exit %d, %q", exit, errOut)
	}
}

// deskDoc answers each "ask" with a task, then waits again; "close" ends it.
const deskDoc = `{"$workflow":"0.2","revision":"d1","initial":"idle","states":{
 "idle":{"on":[{"event":"ask","to":"answer"},{"event":"close","to":"end"}]},
 "answer":{"work":{"task":"echo","version":"1"},"then":"idle"},
 "end":{"final":true}}}`

// TestEventWaitStateAnswers: --wait-state follows the run past the step
// that took the event until it is back in the state named, and prints its
// data; --wait-settled follows it to its end; a misspelt state is refused
// before anything is sent.
func TestEventWaitStateAnswers(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	if _, err := f.Deploy(t.Context(), "desk", []byte(deskDoc)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"desk-1", "desk-2"} {
		if _, _, exit := verb(t, f, "start", "desk", "--id", id, "--input", `{"n":7}`); exit != 0 {
			t.Fatal("start failed")
		}
		waitStatus(t, f, id, wire.StatusWaiting)
	}
	out, errOut, exit := verb(t, f, "event", "desk-1", "ask", "--wait-state", "idle", "--json")
	var a struct {
		Verdict string
		Reached bool
		Status  wire.Status
		States  []string
		Data    map[string]any
	}
	if err := json.Unmarshal([]byte(out), &a); exit != 0 || err != nil || a.Verdict != "moved" || !a.Reached ||
		a.Status.Status != wire.StatusWaiting || strings.Join(a.States, ",") != "idle" || a.Data["n"] != 7.0 {
		t.Errorf("--wait-state idle: exit %d, %q %q (%v)", exit, out, errOut, err)
	}
	h, _, _ := verb(t, f, "history", "desk-1")
	if !strings.Contains(h, "echo") {
		t.Errorf("the answer's task is not in the history:\n%s", h)
	}
	_, errOut, exit = verb(t, f, "event", "desk-1", "ask", "--wait-state", "idel")
	if exit == 0 || !strings.Contains(errOut, `--wait-state: workflow desk (revision d1) of run desk-1 has no state "idel" (did you mean "idle"?); its states: `) {
		t.Errorf("a misspelt state: exit %d, %q", exit, errOut)
	}
	if st, _ := f.Client.Status(t.Context(), "desk-1"); st == nil || st.State != "/states/idle" {
		t.Errorf("the refused wait sent its event: %+v", st)
	}
	out, errOut, exit = verb(t, f, "event", "desk-2", "close", "--wait-state", "answer")
	if exit != 1 || !strings.Contains(out, "run desk-2 settled (done, in end) without entering answer\nresult: {\"n\":7}\ndata: {\"n\":7}\n") {
		t.Errorf("a run that settles before the state: exit %d, %q %q", exit, out, errOut)
	}
	out, errOut, exit = verb(t, f, "event", "desk-1", "close", "--wait-settled")
	if exit != 0 || !strings.Contains(out, "moved: it took the transition from idle to end; the run is done\nrun desk-1 is done (in end)\n") {
		t.Errorf("--wait-settled: exit %d, %q %q", exit, out, errOut)
	}
}

// TestStartWithEvent: start --event delivers the event in the start's
// step, or to the run alone when it exists and is live, and refuses an
// ended run; the run's history holds one input for both.
func TestStartWithEvent(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	if _, err := f.Deploy(t.Context(), "desk", []byte(deskDoc)); err != nil {
		t.Fatal(err)
	}
	if _, errOut, exit := verb(t, f, "start", "desk", "--id", "se-1", "--event", "close", "--wait"); exit != 0 {
		t.Fatalf("start --event close --wait: exit %d, %s", exit, errOut)
	}
	h, _, _ := verb(t, f, "history", "se-1", "--json")
	if n := strings.Count(h, "\n"); n != 1 || !strings.Contains(h, `"event":{"type":"close"}`) {
		t.Errorf("the history of a start with its event holds %d inputs:\n%s", n, h)
	}
	if h, _, _ := verb(t, f, "history", "se-1"); !strings.Contains(h, "event=close") {
		t.Errorf("the history does not show the start's event:\n%s", h)
	}
	if _, _, exit := verb(t, f, "start", "desk", "--id", "se-2", "--input", `{"n":1}`); exit != 0 {
		t.Fatal("start failed")
	}
	waitStatus(t, f, "se-2", wire.StatusWaiting)
	_, errOut, exit := verb(t, f, "start", "desk", "--id", "se-2", "--event", "ask", "--payload", `{"q":1}`)
	if exit != 0 || !strings.Contains(errOut, "run se-2 already exists (it is waiting): the event goes to it alone") {
		t.Errorf("start --event of a live run: exit %d, %q", exit, errOut)
	}
	natstest.WaitFor(t, verbBound, "the event to reach se-2", func() error {
		out, _, _ := verb(t, f, "history", "se-2")
		if strings.Count(out, "echo") == 0 {
			return fmt.Errorf("no task yet:\n%s", out)
		}
		return nil
	})
	verb(t, f, "event", "se-2", "close", "--wait-settled")
	_, errOut, exit = verb(t, f, "start", "desk", "--id", "se-2", "--event", "close")
	if exit != 1 || !strings.Contains(errOut, "run se-2 already exists and is done: it would refuse event close") {
		t.Errorf("start --event of an ended run: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "start", "desk", "--payload", "1"); exit == 0 || !strings.Contains(errOut, "give --event TYPE too") {
		t.Errorf("--payload without --event: exit %d, %q", exit, errOut)
	}
}

// TestBeforeStartSendsAndSaysTheWindow: --before-start sends an input
// for a run that does not exist, saying that only an input stored after
// its start is kept; without it the verbs refuse (TestVerbsRefuseRunsThatDoNotExist).
func TestBeforeStartSendsAndSaysTheWindow(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	for _, args := range [][]string{{"event", "early", "go", "--before-start"}, {"cancel", "early", "--before-start"}} {
		out, errOut, exit := verb(t, f, args...)
		if exit != 0 || !strings.HasPrefix(out, "sent go to run early") && !strings.HasPrefix(out, "cancel of run early requested") ||
			!strings.Contains(errOut, "note: run early does not exist yet") || !strings.Contains(errOut, "There is no early window") ||
			!strings.Contains(errOut, "up to a minute, or twice the dispatchers' --ack-wait if that is longer") {
			t.Errorf("%v: exit %d, %q %q", args, exit, out, errOut)
		}
	}
	_, errOut, _ := verb(t, f, "cancel", "early")
	if !strings.Contains(errOut, "(--before-start sends it anyway)") {
		t.Errorf("the refusal does not name --before-start: %q", errOut)
	}
}

// TestDeployWarnsOfDroppedTasks: a revision that stops using a task that
// unsettled runs of an older revision may still invoke is deployed with a
// warning naming the task and how many runs.
func TestDeployWarnsOfDroppedTasks(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	for _, id := range []string{"dt-1", "dt-2"} {
		if _, _, exit := verb(t, f, "start", "gate", "--id", id, "--input", `{"wait":true}`); exit != 0 {
			t.Fatal("start failed")
		}
		waitStatus(t, f, id, wire.StatusWaiting)
	}
	if _, _, exit := verb(t, f, "start", "gate", "--id", "dt-done", "--input", `{"n":1}`); exit != 0 {
		t.Fatal("start failed")
	}
	waitStatus(t, f, "dt-done", wire.StatusDone)
	noEcho := writeFile(t, "g2.json", `{"$workflow":"0.2","revision":"g2","initial":"gate","states":{
 "gate":{"on":[{"event":"go","to":"end"}]},"end":{"final":true}}}`)
	out, errOut, exit := verb(t, f, "deploy", "gate", noEcho)
	want := "warning: 2 runs of gate revision g1, not settled yet, may still invoke echo@1, which revision g2 does not use: keep a worker serving echo@1 until they settle (jetflow list --workflow gate --revision g1)\n"
	if exit != 0 || !strings.Contains(out, "deployed gate revision g2") || errOut != want {
		t.Errorf("deploy: exit %d, stdout %q, stderr %q; want the warning %q", exit, out, errOut, want)
	}
	out, _, _ = verb(t, f, "deploy", "gate", noEcho, "--json")
	var r struct {
		Dropped []struct {
			Revision, Task string
			Runs           int
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Dropped) != 1 || r.Dropped[0].Revision != "g1" || r.Dropped[0].Task != "echo@1" || r.Dropped[0].Runs != 2 {
		t.Errorf("deploy --json: %v, %s", err, out)
	}
	// A revision that keeps every task warns of nothing.
	_, errOut, exit = verb(t, f, "deploy", "cat", writeFile(t, "c2.json", strings.Replace(catDoc, `"c1"`, `"c2"`, 1)))
	if exit != 0 || errOut != "" {
		t.Errorf("deploy keeping its tasks: exit %d, stderr %q", exit, errOut)
	}
}
