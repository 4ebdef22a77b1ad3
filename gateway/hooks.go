package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetflow/jetflow/trigger"
)

// Codes of the webhook's answers.
const (
	CodeHookUnknown       = "HOOK_UNKNOWN"        // 404: no webhook trigger of that name is deployed
	CodeHookUnconfigured  = "HOOK_UNCONFIGURED"   // 503: this process lacks the webhook's secret
	CodeSignatureInvalid  = "SIGNATURE_INVALID"   // 401: the signature header is missing or does not verify
	CodeTriggerNotApplied = "TRIGGER_NOT_APPLIED" // 422: the body gives no key, run or input the trigger's queries need
)

// hook is POST /api/v1/hooks/{name}: a webhook trigger. It needs no bearer
// token: the body's HMAC-SHA256 under the trigger's secret authenticates
// it.
func (g *Gateway) hook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctx, cancel := opContext(r)
	defer cancel()
	specs, err := trigger.Load(ctx, g.js, g.names)
	if err != nil {
		g.natsError(w, r, "reading the deployed triggers", err)
		return
	}
	var spec *trigger.Spec
	for _, s := range specs {
		if s.Name == name && s.Webhook != nil {
			spec = s
		}
	}
	if spec == nil {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeHookUnknown, Message: fmt.Sprintf("no webhook trigger %q is deployed (jetflow deploy --triggers)", name), Pointer: "path:name"})
		return
	}
	secret := ""
	if g.cfg.Secret != nil {
		secret = g.cfg.Secret(spec.Webhook.SecretEnv)
	}
	if secret == "" {
		g.log.Error("gateway: webhook secret missing", "trigger", name, "variable", spec.Webhook.SecretEnv)
		writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeHookUnconfigured, Message: fmt.Sprintf("webhook %s: this server has no secret in %s", name, spec.Webhook.SecretEnv)})
		return
	}
	body, e := g.readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	if e := verify(r.Header.Get(spec.Webhook.Header), secret, body, spec.Webhook.Header); e != nil {
		writeError(w, e)
		return
	}
	out, err := trigger.Apply(ctx, g.client, spec, trigger.Message{Headers: r.Header, Data: body})
	if errors.Is(err, trigger.ErrPermanent) {
		writeError(w, &Error{Status: http.StatusUnprocessableEntity, Code: CodeTriggerNotApplied, Message: err.Error(), Pointer: "/"})
		return
	}
	if err != nil {
		g.natsError(w, r, "webhook "+name, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

// verify checks a hex HMAC-SHA256 signature of body, with or without a
// "sha256=" prefix.
func verify(sig, secret string, body []byte, header string) *Error {
	bad := func(msg string) *Error {
		return &Error{Status: http.StatusUnauthorized, Code: CodeSignatureInvalid, Message: msg, Pointer: "header:" + header}
	}
	if sig == "" {
		return bad(fmt.Sprintf("no %s header: sign the body with HMAC-SHA256 and send its hex digest there", header))
	}
	got, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(sig), "sha256="))
	if err != nil {
		return bad(fmt.Sprintf("%s is not a hex HMAC-SHA256 digest", header))
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return bad(fmt.Sprintf("%s does not verify: the body was not signed with this webhook's secret", header))
	}
	return nil
}
