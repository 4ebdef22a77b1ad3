package trigger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/subjects"
)

// Message is what a trigger's queries read, as the JSON object
// {"subject": …, "headers": {name: first value}, "data": …}: data is the
// body decoded as JSON, or the body as a string when it is not JSON.
type Message struct {
	Subject string
	Headers map[string][]string
	Data    []byte
}

func (m Message) view() any {
	h := map[string]any{}
	for k, vs := range m.Headers {
		if len(vs) > 0 {
			h[k] = vs[0]
		}
	}
	var data any = string(m.Data)
	if v, err := value.Decode(m.Data, value.Limits{}); err == nil {
		data = v
	}
	return map[string]any{"subject": m.Subject, "headers": h, "data": data}
}

// ErrPermanent is wrapped by a failure that the same message would meet
// again (a query without a value, a run id that is not one): the message
// is terminated, not redelivered.
var ErrPermanent = errors.New("the message cannot trigger")

// Outcome is what a trigger did with a message.
type Outcome struct {
	Action string `json:"action"`
	Run    string `json:"run"`
	Event  string `json:"event,omitempty"`
	Key    string `json:"key"`
}

// Apply starts the spec's run, or delivers its event, for m. A start's run
// id is the trigger's name and the idempotency key, so that the same key
// starts one run however often it comes (a second start of a run id is
// rejected on the run); an event carries the key as its event id, dropped
// as a duplicate within the input stream's duplicate window (2 minutes).
func Apply(ctx context.Context, c *client.Client, s *Spec, m Message) (Outcome, error) {
	view := m.view()
	key, err := s.keyOf(view, m.Data)
	if err != nil {
		return Outcome{}, err
	}
	input := json.RawMessage("null")
	if v, ok, err := s.input.Eval(view, nil); err != nil {
		return Outcome{}, fmt.Errorf("%w: trigger %s: input: %w", ErrPermanent, s.Name, err)
	} else if ok {
		text, err := value.Canonical(v)
		if err != nil {
			return Outcome{}, fmt.Errorf("%w: trigger %s: input: %w", ErrPermanent, s.Name, err)
		}
		input = json.RawMessage(text)
	}
	if s.Action == ActionStart {
		run := runID(s.Name, key)
		opts, err := s.startOptions(view, key)
		if err != nil {
			return Outcome{}, err
		}
		if err := c.StartRun(ctx, s.Workflow, run, input, opts...); err != nil {
			return Outcome{}, err
		}
		return Outcome{Action: ActionStart, Run: run, Key: key}, nil
	}
	v, ok, err := s.run.Eval(view, nil)
	run, isString := v.(string)
	switch {
	case err != nil:
		return Outcome{}, fmt.Errorf("%w: trigger %s: run: %w", ErrPermanent, s.Name, err)
	case !ok || !isString:
		return Outcome{}, fmt.Errorf("%w: trigger %s: run: the query gives no string (the run id) for this message", ErrPermanent, s.Name)
	}
	if err := subjects.CheckRunID(run); err != nil {
		return Outcome{}, fmt.Errorf("%w: trigger %s: run: %w", ErrPermanent, s.Name, err)
	}
	if err := c.SendEvent(ctx, run, s.Event, input, client.EventID(s.Name+"-"+digest(key))); err != nil {
		return Outcome{}, err
	}
	return Outcome{Action: ActionEvent, Run: run, Event: s.Event, Key: key}, nil
}

// startOptions are a start's controls (docs/STARTS.md): the message's
// idempotency key, scoped to the trigger, and the singleton and debounce
// keys its queries give.
func (s *Spec) startOptions(view any, key string) ([]client.StartOption, error) {
	opts := []client.StartOption{client.WithIdempotencyKey("trigger/" + s.Name + "/" + key)}
	if s.singleton != nil {
		k, err := s.queryKey(s.singleton, view, "singleton key")
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithSingleton(k, s.Singleton.Mode))
	}
	if s.debounce != nil {
		k, err := s.queryKey(s.debounce, view, "debounce key")
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithDebounce(k, s.debounceDelay))
	}
	return opts, nil
}

// queryKey is the key q gives for the message: a string as it is, any
// other value as its canonical JSON text.
func (s *Spec) queryKey(q *query.Query, view any, what string) (string, error) {
	v, ok, err := q.Eval(view, nil)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: trigger %s: %s: %w", ErrPermanent, s.Name, what, err)
	case !ok || v == nil || v == "":
		return "", fmt.Errorf("%w: trigger %s: %s: the query gives no key for this message", ErrPermanent, s.Name, what)
	}
	if str, ok := v.(string); ok {
		return str, nil
	}
	text, err := value.Canonical(v)
	if err != nil {
		return "", fmt.Errorf("%w: trigger %s: %s: %w", ErrPermanent, s.Name, what, err)
	}
	return text, nil
}

// keyOf is the message's idempotency key.
func (s *Spec) keyOf(view any, body []byte) (string, error) {
	if s.key == nil { // a webhook without a key query: its body
		return digest(string(body)), nil
	}
	v, ok, err := s.key.Eval(view, nil)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: trigger %s: key: %w", ErrPermanent, s.Name, err)
	case !ok || v == nil:
		return "", fmt.Errorf("%w: trigger %s: key: the query gives no idempotency key for this message (publish it with a Nats-Msg-Id header, or set key)", ErrPermanent, s.Name)
	}
	if str, ok := v.(string); ok {
		if str == "" {
			return "", fmt.Errorf("%w: trigger %s: key: the idempotency key is empty", ErrPermanent, s.Name)
		}
		return str, nil
	}
	text, err := value.Canonical(v)
	if err != nil {
		return "", fmt.Errorf("%w: trigger %s: key: %w", ErrPermanent, s.Name, err)
	}
	return text, nil
}

// runID is the run a start trigger makes for key: "<trigger>-<key>" when
// that is a run id, else "<trigger>-" and the key's digest.
func runID(name, key string) string {
	if id := name + "-" + key; subjects.CheckRunID(id) == nil {
		return id
	}
	return name + "-" + digest(key)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
