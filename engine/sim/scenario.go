package sim

import (
	"fmt"

	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
)

type scenario struct {
	document any
	runID    string
	input    any
	tasks    map[string]*mock
	calls    []call
	observe  func(*run.Invoke) // tests: sees every invocation, else nil
	// results holds the current call's mock answers (see result)
	results map[attempt]*run.TaskResult
	// stored and inProcess: see runOptions and reload
	stored, inProcess bool
}

// attempt names one invocation of a task node.
type attempt struct {
	activation, node string
	n                int
}

type mock struct {
	version    string
	hasVersion bool
	output     *query.Query
	err        string
	hasError   bool
	errorWhen  *query.Query
}

type call struct {
	now           float64
	hasNow        bool
	event         *run.Event
	generation    any // float64 or "previous"
	hasGeneration bool
	input         any
	hasInput      bool
	runID         string
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrScenario, fmt.Sprintf(format, args...))
}

func only(m map[string]any, where string, allowed ...string) error {
	for _, k := range value.Keys(m) {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			return refuse("%s: unknown member '%s'", where, k)
		}
	}
	return nil
}

func nonblankString(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || value.Blank(s) {
		return "", false
	}
	return s, true
}

// parse checks the scenario against the contract, as the reference
// simulator does before running anything.
func parse(v any, written value.Written) (*scenario, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, refuse("scenario must be an object")
	}
	if err := only(m, "scenario", "document", "runId", "input", "tasks", "calls"); err != nil {
		return nil, err
	}
	doc, ok := m["document"]
	if !ok {
		return nil, refuse("scenario: document is required")
	}
	s := &scenario{document: doc, runID: "sim", input: m["input"], tasks: map[string]*mock{}}
	if id, present := m["runId"]; present {
		if s.runID, ok = nonblankString(id); !ok {
			return nil, refuse("scenario: runId must be a nonblank string")
		}
	}
	if raw, present := m["tasks"]; present {
		tasks, ok := raw.(map[string]any)
		if !ok {
			return nil, refuse("scenario: tasks must be an object")
		}
		for _, name := range value.Keys(tasks) {
			t, err := parseMock(name, tasks[name], written.Under("/tasks/"+value.EncodePointerSegment(name)))
			if err != nil {
				return nil, err
			}
			s.tasks[name] = t
		}
	}
	list, ok := m["calls"].([]any)
	if !ok || len(list) == 0 {
		return nil, refuse("scenario: calls must be a non-empty array")
	}
	for i, raw := range list {
		c, err := parseCall(i, raw)
		if err != nil {
			return nil, err
		}
		s.calls = append(s.calls, c)
	}
	return s, nil
}

func parseMock(name string, raw any, written value.Written) (*mock, error) {
	t, ok := raw.(map[string]any)
	if !ok {
		return nil, refuse("tasks/%s: must be an object", name)
	}
	if err := only(t, "tasks/"+name, "version", "output", "error", "errorWhen"); err != nil {
		return nil, err
	}
	m := &mock{}
	if v, present := t["version"]; present {
		if m.version, ok = nonblankString(v); !ok {
			return nil, refuse("tasks/%s: version must be a nonblank string", name)
		}
		m.hasVersion = true
	}
	if e, present := t["error"]; present {
		if m.err, ok = e.(string); !ok {
			return nil, refuse("tasks/%s: error must be a string", name)
		}
		m.hasError = true
	}
	var err error
	if doc, present := t["output"]; present {
		if m.output, err = query.Compile(doc, query.Options{Written: written.Under("/output")}); err != nil {
			return nil, refuse("tasks/%s/output: %v", name, err)
		}
	}
	if doc, present := t["errorWhen"]; present {
		if !m.hasError {
			return nil, refuse("tasks/%s: errorWhen needs error", name)
		}
		if m.errorWhen, err = query.Compile(doc, query.Options{Written: written.Under("/errorWhen")}); err != nil {
			return nil, refuse("tasks/%s/errorWhen: %v", name, err)
		}
	}
	return m, nil
}

func parseCall(i int, raw any) (call, error) {
	where := fmt.Sprintf("calls/%d", i)
	m, ok := raw.(map[string]any)
	if !ok {
		return call{}, refuse("%s: must be an object", where)
	}
	if err := only(m, where, "now", "event", "expectedGeneration", "input", "runId"); err != nil {
		return call{}, err
	}
	var c call
	if v, present := m["now"]; present {
		if c.now, ok = v.(float64); !ok {
			return call{}, refuse("%s: now must be a number", where)
		}
		c.hasNow = true
	}
	if v, present := m["runId"]; present {
		if c.runID, ok = nonblankString(v); !ok {
			return call{}, refuse("%s: runId must be a nonblank string", where)
		}
	}
	if v, present := m["event"]; present {
		ev, ok := v.(map[string]any)
		if !ok {
			return call{}, refuse("%s: event needs a nonblank type", where)
		}
		typ, ok := nonblankString(ev["type"])
		if !ok {
			return call{}, refuse("%s: event needs a nonblank type", where)
		}
		if err := only(ev, where+"/event", "type", "payload"); err != nil {
			return call{}, err
		}
		p, has := ev["payload"]
		c.event = &run.Event{Type: typ, Payload: p, HasPayload: has}
	}
	if v, present := m["expectedGeneration"]; present {
		f, isNum := v.(float64)
		if v != "previous" && !(isNum && f >= 0 && f == float64(int64(f)) && f <= 1<<53-1) {
			return call{}, refuse("%s: expectedGeneration must be a nonnegative integer or \"previous\"", where)
		}
		c.generation, c.hasGeneration = v, true
	}
	c.input, c.hasInput = m["input"]
	return c, nil
}

// registry is the compile-time task registry the mocks stand for: a mock
// without a version is a bare handler.
func (s *scenario) registry() map[string]string {
	out := make(map[string]string, len(s.tasks))
	for name, m := range s.tasks {
		out[name] = m.version
	}
	return out
}
