package step

import (
	"bytes"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// parseOperation reads an operator's pause, resume or terminate request.
// A terminate must say why: the reason is what its status shows.
func (in *Input) parseOperation(kind string, data []byte) error {
	var body wire.Operation
	if len(bytes.TrimSpace(data)) > 0 {
		if err := strictJSON(data, &body); err != nil {
			return malformed("%s body: %v", kind, err)
		}
	}
	if kind == subjects.KindTerminate && strings.TrimSpace(body.Reason) == "" {
		return malformed("terminate body: reason is empty (a terminate says why the run was ended)")
	}
	in.msg.Kind, in.msg.Reason, in.msg.Operator = run.Kind(kind), body.Reason, body.Operator
	return nil
}
