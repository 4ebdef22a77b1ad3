package registry

import (
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/policy"
)

// A deployment's retry policy must not drop the dispatcher's evaluation
// budgets and event bounds: those protect the dispatcher, not the task.
func TestRunOptionsKeepBudgetsUnderAPolicy(t *testing.T) {
	t.Parallel()
	pol, err := policy.Parse([]byte(`{"ship@1":{"maxAttempts":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	base := run.Options{Steps: 1000, Bytes: 2048, MaxBuffered: 7, MaxBufferedBytes: 4096}
	l := &Loader{opts: base}
	for _, tc := range []struct {
		name      string
		dep       Deployment
		wantRetry bool
	}{
		{"no policy", Deployment{}, false},
		{"a policy", Deployment{Document: Document{Policy: pol}}, true},
	} {
		got := l.runOptions(tc.dep)
		if got.Steps != base.Steps || got.Bytes != base.Bytes || got.MaxBuffered != base.MaxBuffered || got.MaxBufferedBytes != base.MaxBufferedBytes {
			t.Errorf("%s: options %+v lost the dispatcher's limits %+v", tc.name, got, base)
		}
		if (got.Retry != nil) != tc.wantRetry {
			t.Errorf("%s: retry rule set = %v, want %v", tc.name, got.Retry != nil, tc.wantRetry)
		}
		if tc.wantRetry && got.Retry("ship", "1").MaxAttempts != 5 {
			t.Errorf("%s: retry of ship@1 = %+v, want 5 attempts", tc.name, got.Retry("ship", "1"))
		}
	}
}
