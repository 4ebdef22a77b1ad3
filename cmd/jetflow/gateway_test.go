package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// gatewayDoc is the document whose curl lines TestGatewayDocExamples runs.
const gatewayDoc = "../../docs/GATEWAY.md"

// TestGatewayRefusedWithoutTokens: serve with --gateway and no tokens, or
// with --http off, exits 2 before starting, naming the flag.
func TestGatewayRefusedWithoutTokens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"JETFLOW_GATEWAY=1"}, serveArgs(), "--gateway (JETFLOW_GATEWAY) needs --gateway-tokens"},
		{[]string{"JETFLOW_GATEWAY_TOKENS=app=short"}, serveArgs("--gateway"), "--gateway-tokens (JETFLOW_GATEWAY_TOKENS): entry 1 (app): the token has 5 characters"},
		{[]string{"JETFLOW_GATEWAY_TOKENS=app=0123456789abcdef"}, []string{"serve", "--ephemeral", "--listen", "127.0.0.1:-1", "--http", "off", "--gateway"}, "which --http off turns off"},
	} {
		_, errOut, exit := runEnv(t, c.env, "", c.args...)
		if exit != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v %v: exit %d, stderr %q, want 2 and %q", c.env, c.args, exit, errOut, c.want)
		}
	}
}

// TestGatewayDocExamples runs every curl line of docs/GATEWAY.md's
// examples, in order, with curl against a real jetflow serve, and checks
// each answers the status its comment shows.
func TestGatewayDocExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	const app, wrk = "app-token-for-the-doc-test", "worker-token-for-the-doc-test"
	d := startDaemon(t, []string{"JETFLOW_GATEWAY=1", "JETFLOW_GATEWAY_TOKENS=app=" + app + ",worker:check-stock@1=" + wrk}, serveArgs()...)
	if out, errOut, exit := runEnv(t, nil, "", "deploy", "order", "../../examples/order.json", "--nats", d.NATS); exit != 0 {
		t.Fatalf("deploy: exit %d: %s%s", exit, out, errOut)
	}
	doc, err := os.ReadFile(gatewayDoc)
	if err != nil {
		t.Fatal(err)
	}
	steps := curlSteps(string(doc))
	if len(steps) < 8 {
		t.Fatalf("found %d curl steps in %s", len(steps), gatewayDoc)
	}
	env := append(os.Environ(), "H="+d.HTTP+"/api/v1", "APP="+app, "WORKER="+wrk)
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, s := range steps {
		switch {
		case strings.HasPrefix(s.line, "T=$(curl"):
			// A take that found nothing yet (204, empty) is taken again.
			script.WriteString("for i in $(seq 1 10); do " + s.line + "; [ -n \"$T\" ] && break; done\n")
			continue
		case strings.HasPrefix(s.line, `curl -s "$H/runs/`) && s.want == "200":
			// A dispatcher slowed by the load may not have applied the
			// start yet: wait for the run's record (bounded) first.
			script.WriteString("for i in $(seq 1 120); do [ \"$(" + s.line + " -o /dev/null -w '%{http_code}')\" = 200 ] && break; sleep 1; done\n")
		case s.want == "":
			script.WriteString(s.line + " >/dev/null\n")
			continue
		}
		// Each checked line prints its status after its body.
		script.WriteString(s.line + " -w '\\nSTATUS " + s.want + " %{http_code}\\n'\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), daemonBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the examples failed: %v\n%s\nscript:\n%s", err, out, script.String())
	}
	checked := 0
	for _, m := range regexp.MustCompile(`STATUS (\d+) (\d+)`).FindAllStringSubmatch(string(out), -1) {
		checked++
		if m[1] != m[2] {
			t.Errorf("an example answered %s where the doc shows %s:\n%s", m[2], m[1], out)
		}
	}
	if want := countWanted(steps); checked != want {
		t.Errorf("checked %d answers, want %d:\n%s", checked, want, out)
	}
}

// curlStep is one command of the doc's examples and the status its
// comment shows ("# 202 {…}"), empty when it shows none.
type curlStep struct{ line, want string }

// curlSteps reads the sh blocks after "## Runs": their commands (joined
// across continuation lines), each with the status the next comment shows.
func curlSteps(doc string) []curlStep {
	_, doc, _ = strings.Cut(doc, "\n## Runs")
	var steps []curlStep
	status := regexp.MustCompile(`^# (\d{3}) `)
	in := false
	pending := ""
	for _, l := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "```sh"):
			in = true
			continue
		case strings.HasPrefix(strings.TrimSpace(l), "```"):
			in = false
			continue
		case !in:
			continue
		}
		l = strings.TrimSpace(l)
		if m := status.FindStringSubmatch(l); m != nil && len(steps) > 0 {
			steps[len(steps)-1].want = m[1]
			continue
		}
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			pending += strings.TrimSuffix(l, `\`)
			continue
		}
		steps = append(steps, curlStep{line: pending + l})
		pending = ""
	}
	return steps
}

func countWanted(steps []curlStep) int {
	n := 0
	for _, s := range steps {
		if s.want != "" {
			n++
		}
	}
	return n
}
