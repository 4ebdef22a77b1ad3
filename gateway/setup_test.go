package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/gateway"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/trigger"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

// Tokens of the test grants.
const (
	appToken      = "app-token-0123456789"
	observerToken = "observer-token-0123456789"
	publisherTok  = "publisher-token-0123456789"
	workerToken   = "worker-token-0123456789"
	scopedWorker  = "scoped-worker-0123456789" // echo@1 only
	operatorToken = "operator-token-0123456789"
)

var grants = "app=" + appToken + ",observer=" + observerToken + ",publisher=" + publisherTok +
	",worker=" + workerToken + ",worker:echo@1=" + scopedWorker + ",operator=" + operatorToken

// echoFlow invokes echo@1 with the run input, then waits for a "go" event
// when the input says so, and ends with the task's output.
const echoFlow = `{"$workflow":"0.2","revision":"r1","initial":"call","states":{
 "call":{"work":{"task":"echo","version":"1"},"then":"gate"},
 "gate":{"choose":[{"guard":"$.context.input.hold","to":"hold"}],"otherwise":"done"},
 "hold":{"on":[{"event":"go","to":"done"}]},
 "done":{"final":true}}}`

// waitFlow waits for a "go" event, then ends.
const waitFlow = `{"$workflow":"0.2","revision":"w1","initial":"wait","states":{
 "wait":{"on":[{"event":"go","to":"done"}]},
 "done":{"final":true}}}`

// slowFlow invokes slow@1, whose attempts time out after 2s, once.
const slowFlow = `{"$workflow":"0.2","revision":"s1","initial":"call","states":{
 "call":{"work":{"task":"slow","version":"1"},"then":"done"},
 "done":{"final":true}}}`

// hooks are webhook triggers of the wait workflow: one starts a run keyed
// by the body's id, one sends it "go"; a third names a secret the
// gateway lacks.
const hooks = `{
 "hook-start": {"webhook": {"secretEnv": "HOOK_SECRET"}, "key": "$.data.id"},
 "hook-go": {"webhook": {"secretEnv": "HOOK_SECRET", "header": "X-Hub-Signature-256"}, "action": "event", "event": "go", "run": {"$concat": ["hook-start-", "$.data.id"]}},
 "hook-unset": {"webhook": {"secretEnv": "NOBODY_SET_THIS"}}
}`

const hookSecret = "the-webhook-secret"

type bundle struct {
	f   *fleet.Fleet
	url string
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Dispatcher: &dispatcher.Config{},
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	for name, doc := range map[string]string{"echo": echoFlow, "wait": waitFlow} {
		if _, err := f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := policy.Parse([]byte(`{"slow@1": {"maxAttempts": 1, "attemptTimeout": "2s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.DeployWith(ctx, "slow", []byte(slowFlow), fleet.DeployOptions{Policy: pol}); err != nil {
		t.Fatal(err)
	}
	gs, err := gateway.ParseGrants(grants)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trigger.Store(ctx, f.JS, f.Names, "wait", []byte(hooks)); err != nil {
		t.Fatal(err)
	}
	secret := func(v string) string {
		if v == "HOOK_SECRET" {
			return hookSecret
		}
		return ""
	}
	g, err := gateway.New(gateway.Config{JS: f.JS, Names: f.Names, Client: f.Client, Registry: f.Registry, Grants: gs, Secret: secret, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	g.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &bundle{f: f, url: srv.URL + gateway.Prefix}
}

// answer is an HTTP answer: its status and JSON body.
type answer struct {
	code int
	body map[string]any
	raw  string
}

// errCode is the answer's error code, empty when it is no error.
func (a answer) errCode() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (a answer) errField(name string) string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e[name].(string)
	return s
}

// call makes a real HTTP request; body is JSON text or empty.
func (b *bundle) call(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.url+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{code: resp.StatusCode, raw: string(data)}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &a.body); err != nil {
			t.Fatalf("%s %s: answer %d is not a JSON object: %s", method, path, resp.StatusCode, data)
		}
	}
	return a
}

// must fails unless the answer has status code.
func (a answer) must(t *testing.T, code int) answer {
	t.Helper()
	if a.code != code {
		t.Fatalf("answer %d, want %d: %s", a.code, code, a.raw)
	}
	return a
}
