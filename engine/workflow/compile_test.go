package workflow

import (
	"slices"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

func TestCompileExposesWhatARunNeeds(t *testing.T) {
	t.Parallel()
	w, err := Compile(mustDecode(t, example), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Chart == nil || w.Lowered == nil {
		t.Fatal("no chart or lowering")
	}
	if !slices.Equal(w.Chart.States(), []string{
		"/states/check", "/states/done", "/states/expired", "/states/prepare",
		"/states/review", "/states/round", "/states/round/flow/states/end", "/states/round/flow/states/job",
	}) {
		// Tree order: roots as declared, each nested scope under its flow.
		t.Errorf("chart states %v", w.Chart.States())
	}
	for _, id := range w.Lowered.Work {
		if w.DAGs[id] == nil || w.Inputs[id] == nil || w.Revisions.DAGs[id] == "" {
			t.Errorf("work state %s lacks its DAG, input or revision", id)
		}
	}
	if len(w.DAGs) != 2 || len(w.Inputs) != 2 {
		t.Errorf("%d DAGs and %d inputs, want 2", len(w.DAGs), len(w.Inputs))
	}
	if got := w.Spec("/states/prepare"); got == nil || got.Limit != 3 {
		t.Errorf("Spec(prepare) = %+v", got)
	}
	if w.Spec("/states/nowhere") != nil {
		t.Error("Spec of an undeclared state")
	}
	scope := map[string]any{"context": map[string]any{"data": 7.0, "input": "in"}}
	if got, ok, err := w.Inputs["/states/prepare"].Eval(scope, nil); err != nil || !ok || got != 7.0 {
		t.Errorf("default input = %v %v %v, want 7", got, ok, err)
	}
	if got, ok, err := w.Inputs["/states/round/flow/states/job"].Eval(scope, nil); err != nil || !ok || got != "in" {
		t.Errorf("declared input = %v %v %v, want in", got, ok, err)
	}
	wantVersions := []string{"/states/prepare/task", "/states/round/flow/states/job/task"}
	if !slices.Equal(w.TaskVersionKeys, wantVersions) || w.TaskVersions[wantVersions[1]] != "2" {
		t.Errorf("task versions %v %v", w.TaskVersionKeys, w.TaskVersions)
	}
	id := w.Identity.Value()
	if id["lowering"] != "0.1" || id["document"] != value.MustCanonical(w.Lowered.Document) ||
		id["control"] != value.MustCanonical(w.Lowered.FSM) || !value.Equal(id["taskVersions"], w.TaskVersionsValue()) {
		t.Errorf("identity %v", id)
	}
	if w.Revisions.Control != value.HashContent(w.Identity.Control) {
		t.Error("the control revision is not the hash of the control text")
	}
	if len(w.Revisions.Value()["dags"].(map[string]any)) != 2 {
		t.Error("revisions value lacks the DAGs")
	}
}

func TestCompileRegistry(t *testing.T) {
	t.Parallel()
	doc := mustDecode(t, example)
	tests := []struct {
		name  string
		tasks map[string]string
		code  fault.Code
		path  string
	}{
		{"no registry takes versions as declared", nil, "", ""},
		{"matching registry", map[string]string{"prepare": "1", "job": "2"}, "", ""},
		{"empty registry", map[string]string{}, fault.JF0018, "/nodes/task/run"},
		{"missing second task", map[string]string{"prepare": "1"}, fault.JF0018, "/nodes/task/run"},
		{"other version", map[string]string{"prepare": "1", "job": "3"}, fault.JF0019, "/nodes/task/version"},
		{"bare handler", map[string]string{"prepare": "", "job": "2"}, fault.JF0019, "/nodes/task/version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(doc, Options{Tasks: tt.tasks})
			if fault.CodeOf(err) != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			if p, _ := fault.PathOf(err); p != tt.path {
				t.Errorf("path %q, want %q", p, tt.path)
			}
		})
	}
}

func TestCompileJSON(t *testing.T) {
	t.Parallel()
	if _, err := CompileJSON([]byte(example), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CompileJSON([]byte(`{"$workflow":`), Options{}); fault.CodeOf(err) != fault.JF0021 {
		t.Errorf("got %v", err)
	}
	// Lowering errors surface unchanged.
	_, err := CompileJSON([]byte(`{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"t","version":"1"},"then":"a"}}}`), Options{})
	if fault.CodeOf(err) != fault.JF0022 {
		t.Errorf("got %v", err)
	}
}
