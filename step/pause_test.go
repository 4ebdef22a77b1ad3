package step

import (
	"testing"

	"github.com/jetflow/jetflow/engine/run"
)

// The operator's requests join the parser's table (and so the fuzz
// target's seeds).
func init() {
	parseCases = append(parseCases, []struct {
		name    string
		subject string
		header  map[string]string
		body    string
		check   func(t *testing.T, in *Input)
		bad     string
	}{
		{
			name: "pause", subject: "jetflow.in.r1.pause", body: `{"reason":"upstream down","operator":"ana"}`,
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindPause || in.msg.Reason != "upstream down" || in.msg.Operator != "ana" {
					t.Errorf("pause %+v", in.msg)
				}
			},
		},
		{
			name: "resume empty", subject: "jetflow.in.r1.resume",
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindResume || in.msg.Reason != "" {
					t.Errorf("resume %+v", in.msg)
				}
			},
		},
		{
			name: "terminate", subject: "jetflow.in.r1.terminate", body: `{"reason":"fraud"}`,
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindTerminate || in.msg.Reason != "fraud" {
					t.Errorf("terminate %+v", in.msg)
				}
			},
		},
		{name: "terminate without reason", subject: "jetflow.in.r1.terminate", body: `{"operator":"ana"}`, bad: "reason is empty"},
		{name: "terminate empty", subject: "jetflow.in.r1.terminate", bad: "reason is empty"},
		{name: "pause string", subject: "jetflow.in.r1.pause", body: `"now"`, bad: "pause body"},
		{name: "resume bad field", subject: "jetflow.in.r1.resume", body: `{"reason":5}`, bad: "resume body"},
		{name: "pause extra token", subject: "jetflow.in.r1.pause.x", bad: "unexpected tokens"},
		{
			name: "postpone", subject: "jetflow.in.r1.postpone", body: `{"task":"check-stock","version":"1.2","deadline":61000}`,
			check: func(t *testing.T, in *Input) {
				if p := in.msg.Postpone; in.msg.Kind != run.KindPostpone || p == nil || p.Task != "check-stock" || p.Version != "1.2" {
					t.Errorf("postpone %+v", in.msg)
				}
			},
		},
		{name: "postpone bad task", subject: "jetflow.in.r1.postpone", body: `{"task":"a.b","version":"1"}`, bad: "postpone body"},
		{name: "postpone no version", subject: "jetflow.in.r1.postpone", body: `{"task":"a"}`, bad: "postpone body"},
		{name: "postpone empty", subject: "jetflow.in.r1.postpone", bad: "postpone body"},
	}...)
}
