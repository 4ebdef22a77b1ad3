package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/simtest"
)

var binary string

// TestMain builds the real command once; every test runs it as a user
// would, as a process with flags and files.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jetflow-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "jetflow")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func jetflow(t *testing.T, stdin string, args ...string) (stdout string, exit int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return out.String() + errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

const orderDoc = `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
 "a":{"work":{"task":"inc","version":"1"},"then":"c"},
 "c":{"choose":[{"guard":{"$gt":["$.context.data",2]},"to":"big"}],"otherwise":"small"},
 "big":{"final":true},"small":{"final":true}}}`

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, want string
		exit            int
	}{
		{"valid", orderDoc, "ok: revision r1, 4 states, 1 work states, tasks: inc@1\n", 0},
		{
			"blank task", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":" ","version":"1"},"then":"a"}}}`,
			"<stdin>:1:64: JF0021 /states/a/work: a task needs a nonblank task name and version\n", 1,
		},
		{
			"unbounded loop", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"choose":[{"guard":true,"to":"a"}],"otherwise":"b"},"b":{"final":true}}}`,
			"<stdin>:1:59: JF0022 /states/a: automatic cycle requires a state limit (give a state on the cycle a \"limit\", the most visits a run may make to it)\n", 1,
		},
		{"not JSON", `{"$workflow":`, "<stdin>:1:14: JF0021 '': workflow must be JSON: unexpected end of JSON input\n", 1},
		{
			"bad guard", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"choose":[{"guard":{"$nope":1},"to":"b"}],"otherwise":"b"},"b":{"final":true}}}`,
			"<stdin>:1:84: JF0007 /states/a/choose/0/guard/$nope: statechart guard failed to compile: JQ0002 unknown operator '$nope' (did you mean '$some'?) [reference path /transitions/0/guard]\n", 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, exit := jetflow(t, c.doc, "validate", "-")
			if out != c.want || exit != c.exit {
				t.Errorf("validate: exit %d, output %q; want exit %d, %q", exit, out, c.exit, c.want)
			}
		})
	}
}

// TestValidateJSON keeps the reference's code, path and message and adds
// where the author's document is at fault; a file's name leads the text.
func TestValidateJSON(t *testing.T) {
	t.Parallel()
	doc := "{\"$workflow\":\"0.2\",\"revision\":\"r\",\"initial\":\"a\",\n\"states\":{\"a\":{\"work\":{\"task\":\"t\",\"version\":\"1\"},\"then\":\"bb\"},\"b\":{\"final\":true}}}"
	out, exit := jetflow(t, doc, "validate", "--json", "-")
	want := `{"error":{"code":"JF0021","path":"/states","message":"JF0021: undeclared state 'bb' in this scope at /states",` +
		`"line":2,"column":50,"source_path":"/states/a/then","reason":"undeclared state 'bb' (did you mean 'b'?)","hint":"states in this scope: a, b"}}` + "\n"
	if exit != 1 || out != want {
		t.Errorf("validate --json: exit %d\n got %s\nwant %s", exit, out, want)
	}
	file := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, exit = jetflow(t, "", "validate", file)
	want = file + ":2:50: JF0021 /states/a/then: undeclared state 'bb' (did you mean 'b'?) (states in this scope: a, b) [reference path /states]\n"
	if exit != 1 || out != want {
		t.Errorf("validate FILE: exit %d\n got %s\nwant %s", exit, out, want)
	}
}

func TestLower(t *testing.T) {
	t.Parallel()
	out, exit := jetflow(t, orderDoc, "lower", "-")
	if exit != 0 || !strings.HasPrefix(out, `{"ok":{"dags":{"/states/a":{"$dag":"0.1"`) {
		t.Errorf("lower: exit %d, %q", exit, out)
	}
	out, exit = jetflow(t, `{"$workflow":"0.1"}`, "lower", "-")
	want := `{"error":{"code":"JF0021","message":"JF0021: a workflow requires \"$workflow\": \"0.2\" and a nonblank revision at ''","path":""}}` + "\n"
	if exit != 1 || out != want {
		t.Errorf("lower of a bad document: exit %d, %q", exit, out)
	}
}

// TestSimulateCorpus runs corpus scenarios through the real command.
func TestSimulateCorpus(t *testing.T) {
	t.Parallel()
	cases := simtest.Cases(t)
	for i, c := range cases {
		if i%10 != 0 { // every tenth case: the engine test runs them all
			continue
		}
		out, exit := jetflow(t, string(c.Scenario), "simulate", "-")
		if exit != 0 {
			t.Fatalf("%s: exit %d: %s", c, exit, out)
		}
		simtest.Compare(t, c, []byte(strings.TrimSpace(out)))
	}
	out, exit := jetflow(t, `{"calls":[]}`, "simulate", "-")
	if exit != 2 || !strings.Contains(out, "document is required") {
		t.Errorf("a bad scenario: exit %d, %q", exit, out)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"validate", "lower", "simulate"} {
		out, exit := jetflow(t, "", verb, "--help")
		if exit != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: exit %d, %q", verb, exit, out)
		}
	}
	if out, exit := jetflow(t, "", "retention", "sweep", "--help"); exit != 0 || !strings.Contains(out, "--yes") {
		t.Errorf("retention sweep --help: exit %d, %q", exit, out)
	}
}

// TestReadmeExample runs the README's first command on the shipped example.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	out, exit := jetflow(t, "", "simulate", "../../examples/order-scenario.json")
	if exit != 0 || !strings.Contains(out, `"status":"waiting"`) || !strings.Contains(out, `"result":{"notified":true},"snapshot"`) {
		t.Fatalf("simulate example: exit %d, %s", exit, out)
	}
	if out, exit := jetflow(t, "", "validate", "../../examples/order.json"); exit != 0 || !strings.HasPrefix(out, "ok: revision order-1") {
		t.Fatalf("validate example: exit %d, %s", exit, out)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, exit := jetflow(t, "", "version")
	if exit != 0 || !strings.HasPrefix(out, "jetflow ") || !strings.Contains(out, "nats-server 2.") || !strings.Contains(out, "nats.go 1.") {
		t.Fatalf("version: exit %d, %q", exit, out)
	}
	if flag, _ := jetflow(t, "", "--version"); flag != out {
		t.Errorf("--version printed %q, version %q", flag, out)
	}
	js, exit := jetflow(t, "", "version", "--json")
	var v struct{ Version, NATSServer, Go string }
	if err := json.Unmarshal([]byte(js), &v); exit != 0 || err != nil || v.Version == "" || !strings.HasPrefix(v.NATSServer, "2.") || !strings.HasPrefix(v.Go, "go1.") {
		t.Errorf("version --json: exit %d, %v, %q", exit, err, js)
	}
}
