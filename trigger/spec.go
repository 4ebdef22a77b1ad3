// Package trigger starts runs and delivers events from messages that come
// from outside jetflow: a message on a NATS subject a deployment names, or
// an HTTP webhook the gateway verifies. A trigger is declared at deploy
// time in a trigger file; queries over the message pick the run input, the
// run to signal and the idempotency key (docs/TRIGGERS.md).
package trigger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Actions a trigger takes.
const (
	ActionStart = "start"
	ActionEvent = "event"
)

// Spec is one trigger of a trigger file, as written.
type Spec struct {
	// Name names the trigger: its stream, and the prefix of the run ids
	// it makes. Unique in the deployment.
	Name string `json:"-"`
	// Workflow is the workflow the trigger starts or signals: the one
	// deployed with the file.
	Workflow string `json:"-"`
	// Subject is the NATS subject (wildcards allowed) a subject trigger
	// listens to, outside the deployment's prefix. Empty for a webhook.
	Subject string `json:"subject,omitempty"`
	// Webhook says the trigger is the gateway's POST /api/v1/hooks/<name>.
	Webhook *Webhook `json:"webhook,omitempty"`
	// Action is "start" (the default) or "event".
	Action string `json:"action,omitempty"`
	// Event is the event type an event trigger delivers.
	Event string `json:"event,omitempty"`
	// Input is the query whose value is the run input or event payload.
	// Default "$.data", the message body.
	Input json.RawMessage `json:"input,omitempty"`
	// Run is the query that picks the run an event trigger signals (its
	// value is the run id). Required for events.
	Run json.RawMessage `json:"run,omitempty"`
	// Key is the query whose value is the idempotency key. Default
	// "$.headers['Nats-Msg-Id']" for a subject and the body's SHA-256 for a
	// webhook, so that a redelivered message starts once.
	Key json.RawMessage `json:"key,omitempty"`
	// Singleton, for a start trigger, allows one active run per key
	// (docs/STARTS.md): its key is a query over the message.
	Singleton *SingletonSpec `json:"singleton,omitempty"`
	// Debounce, for a start trigger, holds each start for a delay; a
	// later message with the same key within it replaces it.
	Debounce *DebounceSpec `json:"debounce,omitempty"`

	input, run, key, singleton, debounce *query.Query
	debounceDelay                        time.Duration
}

// SingletonSpec is a start trigger's singleton key.
type SingletonSpec struct {
	// Key is the query whose value (a string, or JSON text of any other
	// value) is the singleton key. Required.
	Key json.RawMessage `json:"key"`
	// Mode is "refuse" (the default) or "queue".
	Mode string `json:"mode,omitempty"`
}

// DebounceSpec is a start trigger's debounce.
type DebounceSpec struct {
	// Key is the query whose value is the debounce key. Required.
	Key json.RawMessage `json:"key"`
	// Delay is a Go duration ("5s"), at most 24h. Required.
	Delay string `json:"delay"`
}

// Webhook is how a webhook trigger checks its caller.
type Webhook struct {
	// Header carries the signature: hex HMAC-SHA256 of the body, with or
	// without a "sha256=" prefix. Default "X-Signature-256".
	Header string `json:"header,omitempty"`
	// SecretEnv names the environment variable of the process serving
	// the gateway that holds the secret (never the file: it is stored).
	SecretEnv string `json:"secretEnv"`
}

// PathError is a refusal of a trigger file, at a JSON Pointer.
type PathError struct {
	Pointer string
	Msg     string
}

func (e *PathError) Error() string { return e.Pointer + ": " + e.Msg }

// Parse reads a trigger file, a JSON object mapping trigger names to
// specs, for workflow under names; errors name the member at fault.
func Parse(data []byte, workflow string, names subjects.Names) ([]*Spec, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &PathError{"", "not a JSON object mapping trigger names to triggers: " + err.Error()}
	}
	if len(raw) == 0 {
		return nil, &PathError{"", "no triggers"}
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*Spec, 0, len(keys))
	for _, name := range keys {
		ptr := "/" + value.EncodePointerSegment(name)
		if err := subjects.CheckTriggerName(name); err != nil {
			return nil, &PathError{ptr, err.Error()}
		}
		s := &Spec{Name: name, Workflow: workflow}
		dec := json.NewDecoder(bytes.NewReader(raw[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(s); err != nil {
			return nil, &PathError{ptr, "not a trigger (members: subject, webhook, action, event, input, run, key, singleton, debounce): " + err.Error()}
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, &PathError{ptr, "more than one JSON value"}
		}
		if err := s.check(ptr, names); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *Spec) check(ptr string, names subjects.Names) error {
	switch {
	case s.Subject == "" && s.Webhook == nil:
		return &PathError{ptr, "give subject (a NATS subject to listen to) or webhook"}
	case s.Subject != "" && s.Webhook != nil:
		return &PathError{ptr + "/webhook", "a trigger is a subject or a webhook, not both"}
	}
	if s.Subject != "" {
		if err := checkSubject(s.Subject); err != nil {
			return &PathError{ptr + "/subject", err.Error()}
		}
		if names.Owns(s.Subject) || strings.HasPrefix(s.Subject, "$") || s.Subject == ">" || strings.HasPrefix(s.Subject, "*") {
			return &PathError{ptr + "/subject", fmt.Sprintf("%q overlaps jetflow's own subjects (%s.>) or the server's ($...): listen to your application's subjects", s.Subject, names.Prefix())}
		}
	}
	if s.Webhook != nil {
		if s.Webhook.SecretEnv == "" {
			return &PathError{ptr + "/webhook/secretEnv", "name the environment variable that holds the HMAC secret on the processes serving the gateway"}
		}
		if s.Webhook.Header == "" {
			s.Webhook.Header = "X-Signature-256"
		}
	}
	switch s.Action {
	case "":
		s.Action = ActionStart
	case ActionStart, ActionEvent:
	default:
		return &PathError{ptr + "/action", fmt.Sprintf("%q is not start or event", s.Action)}
	}
	if s.Action == ActionEvent {
		if err := subjects.CheckEventType(s.Event); err != nil {
			return &PathError{ptr + "/event", err.Error()}
		}
		if len(s.Run) == 0 {
			return &PathError{ptr + "/run", "an event trigger needs run: a query over the message whose value is the run id, e.g. \"$.data.order\""}
		}
	} else if s.Event != "" {
		return &PathError{ptr + "/event", "only an event trigger (action event) names an event"}
	}
	var err error
	if s.input, err = compile(s.Input, `"$.data"`, ptr+"/input"); err != nil {
		return err
	}
	if len(s.Run) > 0 {
		if s.run, err = compile(s.Run, "", ptr+"/run"); err != nil {
			return err
		}
	}
	defKey := `"$.headers['Nats-Msg-Id']"`
	if s.Webhook != nil {
		defKey = ""
	}
	if s.key, err = compile(s.Key, defKey, ptr+"/key"); err != nil {
		return err
	}
	return s.checkControls(ptr)
}

// checkControls compiles a start trigger's singleton and debounce.
func (s *Spec) checkControls(ptr string) error {
	if (s.Singleton != nil || s.Debounce != nil) && s.Action != ActionStart {
		return &PathError{ptr, "only a start trigger has singleton or debounce"}
	}
	var err error
	if g := s.Singleton; g != nil {
		if len(g.Key) == 0 {
			return &PathError{ptr + "/singleton/key", "a singleton needs key: a query over the message whose value is the singleton key"}
		}
		if s.singleton, err = compile(g.Key, "", ptr+"/singleton/key"); err != nil {
			return err
		}
		if g.Mode != "" && g.Mode != wire.SingletonRefuse && g.Mode != wire.SingletonQueue {
			return &PathError{ptr + "/singleton/mode", fmt.Sprintf("%q is not refuse or queue", g.Mode)}
		}
	}
	if d := s.Debounce; d != nil {
		if len(d.Key) == 0 {
			return &PathError{ptr + "/debounce/key", "a debounce needs key: a query over the message whose value is the debounce key"}
		}
		if s.debounce, err = compile(d.Key, "", ptr+"/debounce/key"); err != nil {
			return err
		}
		s.debounceDelay, err = time.ParseDuration(d.Delay)
		if err != nil || s.debounceDelay <= 0 || s.debounceDelay > wire.MaxDebounce {
			return &PathError{ptr + "/debounce/delay", fmt.Sprintf("%q is not a delay between 0 and 24h, such as \"5s\"", d.Delay)}
		}
	}
	return nil
}

func compile(doc json.RawMessage, def, ptr string) (*query.Query, error) {
	if len(doc) == 0 {
		if def == "" {
			return nil, nil
		}
		doc = json.RawMessage(def)
	}
	v, err := value.Decode(doc, value.Limits{})
	if err != nil {
		return nil, &PathError{ptr, "not JSON: " + err.Error()}
	}
	q, err := query.Compile(v, query.Options{})
	if err != nil {
		return nil, &PathError{ptr, "not a query: " + err.Error()}
	}
	return q, nil
}

// checkSubject admits a NATS subject: dot-separated non-empty tokens of
// printable ASCII without white space, '*' and '>' alone as tokens, '>'
// last.
func checkSubject(s string) error {
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if t == "" {
			return fmt.Errorf("subject %q has an empty token", s)
		}
		for j := 0; j < len(t); j++ {
			if c := t[j]; c <= ' ' || c > '~' {
				return fmt.Errorf("subject %q has a byte outside printable ASCII in token %d", s, i+1)
			}
		}
		if (strings.Contains(t, "*") && t != "*") || (strings.Contains(t, ">") && t != ">") {
			return fmt.Errorf("subject %q: a wildcard must be a whole token", s)
		}
		if t == ">" && i != len(toks)-1 {
			return fmt.Errorf("subject %q: > must be the last token", s)
		}
	}
	return nil
}
