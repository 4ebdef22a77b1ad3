package gateway_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
)

func sign(body string) string {
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

// post sends a webhook with a signature header, no bearer token.
func (b *bundle) post(t *testing.T, hook, header, sig, body string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"hooks/"+hook, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if sig != "" {
		req.Header.Set(header, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, raw: string(data)}
	_ = json.Unmarshal(data, &a.body)
	return a
}

func TestWebhooksVerifyTheirSignature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"id":"w7"}`
	for _, c := range []struct {
		name, hook, header, sig, body string
		code                          int
		errCode, pointer              string
	}{
		{"unsigned", "hook-start", "X-Signature-256", "", body, 401, "SIGNATURE_INVALID", "header:X-Signature-256"},
		{"signed with another secret", "hook-start", "X-Signature-256", "sha256=" + hex.EncodeToString(make([]byte, 32)), body, 401, "SIGNATURE_INVALID", "header:X-Signature-256"},
		{"signature of another body", "hook-start", "X-Signature-256", sign(`{"id":"w8"}`), body, 401, "SIGNATURE_INVALID", "header:X-Signature-256"},
		{"not hex", "hook-start", "X-Signature-256", "zz", body, 401, "SIGNATURE_INVALID", "header:X-Signature-256"},
		{"no such hook", "hook-none", "X-Signature-256", sign(body), body, 404, "HOOK_UNKNOWN", "path:name"},
		{"secret not set here", "hook-unset", "X-Signature-256", sign(body), body, 503, "HOOK_UNCONFIGURED", ""},
		{"no key in the body", "hook-start", "X-Signature-256", sign(`{"other":1}`), `{"other":1}`, 422, "TRIGGER_NOT_APPLIED", "/"},
	} {
		a := b.post(t, c.hook, c.header, c.sig, c.body)
		if a.code != c.code || a.errCode() != c.errCode || a.errField("pointer") != c.pointer {
			t.Errorf("%s: %d %s, want %d %s at %q", c.name, a.code, a.raw, c.code, c.errCode, c.pointer)
		}
	}
	// Signed: starts one run however often it is delivered.
	for range 2 {
		a := b.post(t, "hook-start", "X-Signature-256", sign(body), body).must(t, http.StatusAccepted)
		if a.body["run"] != "hook-start-w7" {
			t.Fatalf("webhook start: %s", a.raw)
		}
	}
	natstest.WaitFor(t, 2*time.Minute, "the hook's run to wait", func() error {
		s := b.call(t, http.MethodGet, "runs/hook-start-w7", observerToken, "")
		if s.body["status"] != "waiting" {
			return fmt.Errorf("%d %s", s.code, s.raw)
		}
		return nil
	})
	// The event hook correlates by the body's id, with a GitHub-style header.
	b.post(t, "hook-go", "X-Hub-Signature-256", "sha256="+sign(body), body).must(t, http.StatusAccepted)
	r := b.call(t, http.MethodGet, "runs/hook-start-w7/result?wait=2m", observerToken, "").must(t, http.StatusOK)
	if r.body["status"] != "done" {
		t.Fatalf("after the event hook: %s", r.raw)
	}
}
