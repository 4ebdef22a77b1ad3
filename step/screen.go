package step

import (
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
)

// ReasonForgedToken is the reason recorded for a result whose token is not
// the one its invocation carried: forged, meant for another run, guessed,
// or signed with a secret the deployment no longer accepts.
const ReasonForgedToken = "forged or stale token"

// Screen refuses what must never reach the reducer: a task result that
// does not echo its invocation's token. The error wraps run.ErrRejected,
// so the refusal is recorded on the run like any rejection. Without a
// signer every result is refused (fail closed).
func Screen(s Settings, in *Input) error {
	if in.Kind != subjects.KindResult {
		return nil
	}
	r := in.msg.Result
	if s.Tokens == nil || r == nil || !s.Tokens.Verify(in.RunID, r.Activation, r.Node, r.Attempt, in.token) {
		return fmt.Errorf("%w: %s", run.ErrRejected, ReasonForgedToken)
	}
	return nil
}

// screenAndApply is the reducer behind screen.
func screenAndApply(s Settings, def *Definition, in *Input, st *run.State, msg run.Message) (*run.State, []run.Effect, error) {
	if err := Screen(s, in); err != nil {
		return nil, nil, err
	}
	return safeApply(def.Program, st, msg)
}
