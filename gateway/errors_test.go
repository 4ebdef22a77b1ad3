package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jetflow/jetflow/gateway"
)

func TestRolesGuardEveryEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		name, method, path, token, body string
		code                            int
		errCode                         string
	}{
		{"no token", http.MethodGet, "runs/x", "", "", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"unknown token", http.MethodGet, "runs/x", "not-a-token-of-ours-at-all", "", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"basic auth", http.MethodGet, "runs/x", "", "", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"observer starts", http.MethodPost, "runs", observerToken, `{"workflow":"wait"}`, http.StatusForbidden, "FORBIDDEN"},
		{"publisher waits", http.MethodPost, "runs?wait=1s", publisherTok, `{"workflow":"wait"}`, http.StatusForbidden, "FORBIDDEN"},
		{"publisher reads", http.MethodGet, "runs", publisherTok, "", http.StatusForbidden, "FORBIDDEN"},
		{"observer sends an event", http.MethodPost, "runs/x/events/go", observerToken, "", http.StatusForbidden, "FORBIDDEN"},
		{"observer cancels", http.MethodPost, "runs/x/cancel", observerToken, "", http.StatusForbidden, "FORBIDDEN"},
		{"app takes", http.MethodPost, "tasks/echo/1/take?wait=0s", appToken, "", http.StatusForbidden, "FORBIDDEN"},
		{"worker of echo@1 takes slow@1", http.MethodPost, "tasks/slow/1/take?wait=0s", scopedWorker, "", http.StatusForbidden, "FORBIDDEN"},
		{"worker starts", http.MethodPost, "runs", workerToken, `{"workflow":"wait"}`, http.StatusForbidden, "FORBIDDEN"},
		{"operator takes", http.MethodPost, "tasks/slow/1/take?wait=0s", operatorToken, "", http.StatusNoContent, ""},
		{"operator reads", http.MethodGet, "runs", operatorToken, "", http.StatusOK, ""},
	} {
		a := b.call(t, c.method, c.path, c.token, c.body)
		if c.name == "basic auth" {
			continue // covered below with its own header
		}
		if a.code != c.code || a.errCode() != c.errCode {
			t.Errorf("%s: answer %d %s, want %d %s", c.name, a.code, a.raw, c.code, c.errCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, b.url+"runs/x", nil)
	req.SetBasicAuth("app", appToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("basic auth: %d %q, want 401 with WWW-Authenticate", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func TestErrorsNameWhatIsWrong(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		name, method, path, body string
		code                     int
		errCode, pointer         string
	}{
		{"no workflow", http.MethodPost, "runs", `{"input":1}`, 400, "INVALID", "/workflow"},
		{"unknown member", http.MethodPost, "runs", `{"workflow":"wait","inputs":1}`, 400, "INVALID", "/inputs"},
		{"workflow not a string", http.MethodPost, "runs", `{"workflow":7}`, 400, "INVALID", "/workflow"},
		{"bad run id", http.MethodPost, "runs", `{"workflow":"wait","id":"a.b"}`, 400, "INVALID", "/id"},
		{"bad event type", http.MethodPost, "runs", `{"workflow":"wait","event":{"type":"a b"}}`, 400, "INVALID", "/event/type"},
		{"priority out of range", http.MethodPost, "runs", `{"workflow":"wait","priority":10}`, 400, "INVALID", "/priority"},
		{"not JSON", http.MethodPost, "runs", `{"workflow":`, 400, "INVALID", "/"},
		{"not an object", http.MethodPost, "runs", `[1]`, 400, "INVALID", "/"},
		{"workflow not deployed", http.MethodPost, "runs", `{"workflow":"nope"}`, 404, "WORKFLOW_UNKNOWN", "/workflow"},
		{"revision not deployed", http.MethodPost, "runs", `{"workflow":"wait","revision":"w9"}`, 404, "WORKFLOW_UNKNOWN", "/revision"},
		{"bad wait", http.MethodPost, "runs?wait=soon", `{"workflow":"wait"}`, 400, "INVALID", "query:wait"},
		{"wait too long", http.MethodPost, "runs?wait=100h", `{"workflow":"wait"}`, 400, "INVALID", "query:wait"},
		{"no run", http.MethodGet, "runs/nobody", "", 404, "RUN_NOT_FOUND", "path:run"},
		{"bad run in path", http.MethodGet, "runs/a*b", "", 400, "INVALID", "path:run"},
		{"bad limit", http.MethodGet, "runs?limit=0", "", 400, "INVALID", "query:limit"},
		{"bad status", http.MethodGet, "runs?status=sleeping", "", 400, "INVALID", "query:status"},
		{"bad time", http.MethodGet, "runs?startedAfter=yesterday", "", 400, "INVALID", "query:startedAfter"},
		{"bad match", http.MethodGet, "runs?match=%7B", "", 400, "INVALID", "query:match"},
		{"unknown parameter", http.MethodGet, "runs?flow=wait", "", 400, "INVALID", "query:flow"},
		{"event payload not JSON", http.MethodPost, "runs/x/events/go?beforeStart=true", `{`, 400, "INVALID", "/"},
		{"event to no run", http.MethodPost, "runs/nobody/events/go", `1`, 404, "RUN_NOT_FOUND", "path:run"},
		{"task not deployed", http.MethodPost, "tasks/nope/1/take?wait=0s", "", 404, "TASK_UNKNOWN", "path:task"},
		{"bad version", http.MethodPost, "tasks/echo/1~2/take", "", 400, "INVALID", "path:version"},
		{"no endpoint", http.MethodGet, "nothing", "", 404, "NOT_FOUND", "path"},
		{"lease not ours", http.MethodPost, "leases/bm90LWEtbGVhc2U/complete", `{"output":1}`, 400, "INVALID", "path:lease"},
	} {
		a := b.call(t, c.method, c.path, operatorToken, c.body)
		if a.code != c.code || a.errCode() != c.errCode || a.errField("pointer") != c.pointer || a.errField("message") == "" {
			t.Errorf("%s: answer %d %s, want %d %s at %s", c.name, a.code, a.raw, c.code, c.errCode, c.pointer)
		}
	}
}

// A lease is the gateway's word only about the consumer of its own task
// version: one naming another consumer's acknowledgement subject, or a
// task the caller may not serve, is refused.
func TestForgedLeasesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	forge := func(l gateway.Lease) string {
		data, _ := json.Marshal(l)
		return base64.RawURLEncoding.EncodeToString(data)
	}
	base := gateway.Lease{Task: "echo", Version: "1", Run: "r", Activation: "a", Node: "task", Attempt: 1, Token: "v1.x"}
	other := base
	other.Ack = "$JS.ACK.jetflow_tasks.task_slow_1.1.1.1.1796195775472525835.0"
	if a := b.call(t, http.MethodPost, "leases/"+forge(other)+"/heartbeat", scopedWorker, ""); a.code != 400 || a.errField("pointer") != "path:lease" {
		t.Errorf("another consumer's ack subject: %d %s", a.code, a.raw)
	}
	elsewhere := base
	elsewhere.Ack = "jetflow.in.r.start"
	if a := b.call(t, http.MethodPost, "leases/"+forge(elsewhere)+"/heartbeat", scopedWorker, ""); a.code != 400 {
		t.Errorf("an input subject as ack subject: %d %s", a.code, a.raw)
	}
	slow := base
	slow.Task = "slow"
	slow.Ack = other.Ack
	if a := b.call(t, http.MethodPost, "leases/"+forge(slow)+"/heartbeat", scopedWorker, ""); a.code != 403 {
		t.Errorf("a lease of a task the worker may not serve: %d %s", a.code, a.raw)
	}
}

func TestParseGrants(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"",
		"app",
		"app=short",
		"admin=0123456789abcdef",
		"observer:echo@1=0123456789abcdef",
		"worker:echo=0123456789abcdef",
		"worker:a.b@1=0123456789abcdef",
		"app=0123456789abcdef,observer=0123456789abcdef",
	} {
		if _, err := gateway.ParseGrants(bad); err == nil {
			t.Errorf("ParseGrants(%q) accepted", bad)
		}
	}
	gs, err := gateway.ParseGrants(" app=0123456789abcdef== , worker:ship@1.2.0=fedcba9876543210")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Token != "0123456789abcdef==" || gs[1].Task != "ship" || gs[1].Version != "1.2.0" || gs[1].Name() != "worker:ship@1.2.0" {
		t.Fatalf("grants %+v", gs)
	}
}
