package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestRemovedRunVerbs: status, history and replay of a run removed by
// retention say so; list leaves it out unless asked for removed runs.
func TestRemovedRunVerbs(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx := context.Background()
	keep, err := policy.Parse([]byte(`{"$run":{"retention":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"$workflow":"0.2","revision":"b1","initial":"w","states":{"w":{"on":[{"event":"go","to":"done"}]},"done":{"final":true}}}`
	if _, err := f.DeployWith(ctx, "brief", []byte(doc), fleet.DeployOptions{Policy: keep}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.StartRun(ctx, "brief", "rm1", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "rm1", wire.StatusWaiting)
	if err := f.Client.SendEvent(ctx, "rm1", "go", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, verbBound, "rm1 removed", func() error {
		if _, err := f.Client.Status(ctx, "rm1"); !errors.Is(err, runrecord.ErrRemoved) {
			return errors.New("not removed")
		}
		return nil
	})

	out, _, code := verb(t, f, "status", "rm1")
	if code != 0 || !strings.Contains(out, "removed by retention at ") || !strings.Contains(out, "done at ") || !strings.Contains(out, "brief@b1") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	out, _, code = verb(t, f, "status", "rm1", "--json")
	var js struct {
		Status  string       `json:"status"`
		Removed wire.Removed `json:"removed"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != 0 || js.Status != "removed" || js.Removed.Status != wire.StatusDone || js.Removed.At == 0 {
		t.Errorf("status --json: exit %d, %v\n%s", code, err, out)
	}
	for _, v := range []string{"history", "replay"} {
		_, errOut, code := verb(t, f, v, "rm1")
		if code != 1 || !strings.Contains(errOut, "run rm1 removed by retention at ") {
			t.Errorf("%s: exit %d\n%s", v, code, errOut)
		}
	}
	if out, _, _ := verb(t, f, "list"); strings.Contains(out, "rm1") {
		t.Errorf("list shows the removed run:\n%s", out)
	}
}

// TestArchivedRunVerbs: a run of a deployment that archives its runs is
// read from the archive once removed: status prints it as it was removed
// under the archived mark, history its messages with verdicts, replay
// finds the rebuilt state equal to the archived record.
func TestArchivedRunVerbs(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx := context.Background()
	keep, err := policy.Parse([]byte(`{"$run":{"retention":"1s","archive":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"$workflow":"0.2","revision":"a1","initial":"w","states":{"w":{"on":[{"event":"go","to":"done"}]},"done":{"final":true}}}`
	if _, err := f.DeployWith(ctx, "kept", []byte(doc), fleet.DeployOptions{Policy: keep}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.StartRun(ctx, "kept", "ar1", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "ar1", wire.StatusWaiting)
	if err := f.Client.SendEvent(ctx, "ar1", "go", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, verbBound, "ar1 removed", func() error {
		if _, err := f.Client.Status(ctx, "ar1"); !errors.Is(err, runrecord.ErrRemoved) {
			return errors.New("not removed")
		}
		return nil
	})

	out, _, code := verb(t, f, "status", "ar1")
	if code != 0 || !strings.HasPrefix(out, "archived (removed by retention at ") || !strings.Contains(out, "kept@a1") || !strings.Contains(out, "done") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	out, _, code = verb(t, f, "status", "ar1", "--json")
	var js struct {
		Status   string        `json:"status"`
		Archived *wire.Removed `json:"archived"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != 0 || js.Status != wire.StatusDone || js.Archived == nil || !js.Archived.Archived {
		t.Errorf("status --json: exit %d, %v\n%s", code, err, out)
	}
	out, errOut, code := verb(t, f, "history", "ar1")
	if code != 0 || !strings.Contains(errOut, "archived (removed by retention at ") || strings.Count(out, "applied") != 2 || !strings.Contains(out, "event") {
		t.Errorf("history: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = verb(t, f, "replay", "ar1")
	if code != 0 || !strings.Contains(errOut, "archived (removed by retention at ") || !strings.Contains(out, "state equal") {
		t.Errorf("replay: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, _, code := verb(t, f, "replay", "--restore", "ar1"); code == 0 {
		t.Error("replay --restore of an archived run succeeded")
	}
}
