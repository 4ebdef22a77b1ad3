package step

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
)

// testSigner signs the invocations of tests that render without a
// dispatcher.
var testSigner = mustSigner(1)

func mustSigner(b byte) *token.Signer {
	s, err := token.New(bytes.Repeat([]byte{b}, token.SecretSize))
	if err != nil {
		panic(err)
	}
	return s
}

func TestRenderNeedsASigner(t *testing.T) {
	t.Parallel()
	e := run.Effect{ID: "x", Invoke: &run.Invoke{Task: "t", Version: "1", Activation: "a", Attempt: 1}}
	if _, _, err := Render(subjects.Must(""), nil, "r", &run.State{}, []run.Effect{e}, 0); err == nil || !strings.Contains(err.Error(), "token signer") {
		t.Fatalf("render without a signer: %v", err)
	}
}

func TestScreen(t *testing.T) {
	t.Parallel()
	cfg := Settings{Tokens: testSigner}
	res := func(runID, tok string) *Input {
		return &Input{
			RunID: runID, Kind: subjects.KindResult, token: tok,
			msg: run.Message{Kind: run.KindResult, Result: &run.TaskResult{Activation: "a", Node: "n", Attempt: 1}},
		}
	}
	good := testSigner.Sign("r", "a", "n", 1)
	if err := Screen(cfg, res("r", good)); err != nil {
		t.Errorf("a genuine result was screened out: %v", err)
	}
	for name, c := range map[string]struct {
		cfg Settings
		in  *Input
	}{
		"another run":     {cfg, res("other", good)},
		"no token":        {cfg, res("r", "")},
		"another secret":  {cfg, res("r", mustSigner(2).Sign("r", "a", "n", 1))},
		"no signer":       {Settings{}, res("r", good)},
		"no result value": {cfg, &Input{RunID: "r", Kind: subjects.KindResult, token: good}},
	} {
		err := Screen(c.cfg, c.in)
		if err == nil || !strings.Contains(err.Error(), ReasonForgedToken) {
			t.Errorf("%s: screen = %v", name, err)
		}
	}
	if err := Screen(cfg, &Input{RunID: "r", Kind: subjects.KindEvent}); err != nil {
		t.Errorf("an event was screened: %v", err)
	}
}
