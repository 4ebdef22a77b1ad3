package layers_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const mod = "github.com/jetflow/jetflow/"

// pkg is one package of the module as go list describes it.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	GoFiles    []string
}

func list(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,Imports,Deps,GoFiles", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, mod)] = p
	}
	return pkgs
}

// matches reports whether path is pattern or, for a pattern ending in
// "/", lies under it.
func matches(path, pattern string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(path, pattern) || path == strings.TrimSuffix(pattern, "/")
	}
	return path == pattern
}

// rule forbids a package (and, with deps, anything it pulls in) the
// imports listed, saying why.
type rule struct {
	pkg       string
	deps      bool // check every dependency, not only direct imports
	forbidden []string
	why       string
}

var rules = []rule{
	{
		"client", true,
		[]string{mod + "dispatcher", "github.com/prometheus/", mod + "policy", mod + "fleet", mod + "embedded"},
		"an application embeds the client: it must not pull in the runtime",
	},
	{"bulk", true, []string{mod + "dispatcher", "github.com/prometheus/", mod + "policy", mod + "fleet"}, "bulk jobs reach runs as any client does: dispatchers run them, they do not drive the dispatcher"},
	{"schedule", true, []string{mod + "dispatcher", "github.com/prometheus/", mod + "policy", mod + "fleet", mod + "console"}, "schedule fires reach runs as any client does: dispatchers run the runner, it does not drive the dispatcher"},
	{"runindex", true, []string{mod + "dispatcher", "github.com/prometheus/", mod + "fleet", mod + "console"}, "the run index is kept beside the dispatcher, from the run bucket's own stream: it does not drive the dispatcher"},
	{"replay", true, []string{mod + "dispatcher", "github.com/prometheus/"}, "replay reaches records through runrecord and steps through step"},
	{"console", true, []string{mod + "dispatcher", mod + "fleet"}, "the console reads records through runrecord and replays through replay"},
	{"runrecord", true, []string{mod + "engine/", "github.com/nats-io/", mod + "kvstore"}, "the record format knows neither the engine nor NATS"},
	{
		"step", false,
		[]string{mod + "dispatcher", mod + "kvstore", mod + "registry", mod + "embedded", "github.com/nats-io/nats.go/jetstream", "net", "net/http", "os", "log/slog"},
		"the step is pure: no I/O, so that a dispatcher and a replay take the same path",
	},
	{"kvstore", false, []string{mod + "engine/", mod + "policy", mod + "dispatcher", mod + "step", mod + "registry"}, "kvstore holds stores only"},
	{"registry", false, []string{mod + "dispatcher"}, "the registry serves dispatchers and replays alike"},
	{
		"provision", true,
		[]string{mod + "engine/", mod + "policy", mod + "registry", mod + "step", mod + "runrecord", mod + "dispatcher", mod + "worker", mod + "fleet"},
		"provision holds the server's configurations: names, the wire and the stores' retry, nothing of the engine or the runtime",
	},
	{
		"authoring", false,
		[]string{mod + "dispatcher", mod + "fleet", mod + "registry", mod + "kvstore", "github.com/nats-io/", "net", "os", "log/slog"},
		"authoring diagnostics are pure: a document and an engine error in, a diagnostic out",
	},
	{"subjects", true, []string{mod}, "subject names depend on nothing of ours"},
	{"wire", true, []string{mod}, "the wire format depends on nothing of ours"},
	{"payload", true, []string{mod + "engine/", mod + "kvstore", mod + "step", mod + "runrecord", mod + "client", mod + "worker", mod + "dispatcher"}, "payloads by reference depend on the names and the wire alone: the worker SDK links them"},
	{"clock", true, []string{mod}, "the clock depends on nothing of ours: the worker SDK links it"},
	{"lifecycle", true, []string{mod}, "the lifecycle contract depends on nothing of ours: the worker SDK links it"},
	{"tracing", true, []string{mod, "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/"}, "the trace ids and carrier depend on nothing of ours and on the OpenTelemetry API alone: the worker SDK links them"},
	{"taskconsumer", true, []string{mod + "wire", mod + "kvstore", mod + "provision", mod + "worker", mod + "engine/", mod + "clock", mod + "lifecycle"}, "the task consumer depends on the names alone: the worker SDK links it"},
}

func TestImportRules(t *testing.T) {
	pkgs := list(t)
	for _, r := range rules {
		p, ok := pkgs[r.pkg]
		if !ok {
			t.Errorf("package %s is gone: update the rule (%s)", r.pkg, r.why)
			continue
		}
		imports := p.Imports
		if r.deps {
			imports = p.Deps
		}
		for _, imp := range imports {
			for _, bad := range r.forbidden {
				if matches(imp, bad) || (bad == mod && strings.HasPrefix(imp, mod)) {
					t.Errorf("%s imports %s: %s", r.pkg, imp, r.why)
				}
			}
		}
	}
}

// workerDeps are the only packages of ours the worker SDK may link: the
// names and the wire format it speaks, the two leaves every long-lived
// service shares (each depends on nothing of ours), the task consumer's
// definition, which depends on the names alone, and the trace context
// (the OpenTelemetry API, never its SDK), and payloads by reference
// (the names, the wire and the Object Store).
var workerDeps = []string{mod + "subjects", mod + "wire", mod + "clock", mod + "lifecycle", mod + "taskconsumer", mod + "tracing", mod + "payload"}

// TestWorkerNeedsOnlySubjectsAndWire: a worker program links the SDK and
// nothing else of ours but the leaves in workerDeps.
func TestWorkerNeedsOnlySubjectsAndWire(t *testing.T) {
	p := list(t)["worker"]
	for _, d := range p.Deps {
		if strings.HasPrefix(d, mod) && !slices.Contains(workerDeps, d) {
			t.Errorf("worker depends on %s: the SDK needs only %v", d, workerDeps)
		}
	}
	if !slices.Contains(p.Deps, mod+"wire") {
		t.Error("worker no longer depends on wire: is the rule still checking the SDK?")
	}
}

// readVerbs are the CLI verbs that only read; they reach records through
// runrecord and client, never through the dispatcher.
var readVerbs = []string{"status.go", "list.go", "history.go", "replay.go", "graph.go", "start.go", "event.go", "cancel.go", "workflows.go"}

func TestReadVerbsDoNotImportTheDispatcher(t *testing.T) {
	p := list(t)["cmd/jetflow/cli"]
	checked := 0
	for _, f := range p.GoFiles {
		if !slices.Contains(readVerbs, f) {
			continue
		}
		checked++
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == mod+"dispatcher" {
				t.Errorf("cli/%s imports %s: a read verb reaches records through runrecord and client", f, path)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d read verbs of %v: were they renamed?", checked, p.GoFiles)
	}
}
