package compose

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	composecli "github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/jetflow/jetflow/cmd/jetflow/cli"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/fleet"
)

// natsServices are the cluster's nodes; clusterURLs their client URLs,
// which every jetflow process must be given, all of them.
var (
	natsServices = []string{"nats-1", "nats-2", "nats-3"}
	clusterURLs  = []string{"nats://nats-1:4222", "nats://nats-2:4222", "nats://nats-3:4222"}
)

// jetflowTargets are the Dockerfile targets whose images run jetflow code.
var jetflowTargets = []string{"jetflow", "worker-exec", "worker-node"}

type bundle struct {
	root    string
	project *types.Project
	stages  []*stage
}

func setup(t *testing.T) bundle {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts, err := composecli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		composecli.WithWorkingDirectory(root),
		// Only the file decides: no .env, no variables from the test's environment.
		composecli.WithEnv([]string{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(ctx)
	if err != nil {
		t.Fatalf("docker-compose.yml does not load as a compose project: %v", err)
	}
	stages, err := readDockerfile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return bundle{root: root, project: project, stages: stages}
}

func (b bundle) service(t *testing.T, name string) types.ServiceConfig {
	t.Helper()
	s, ok := b.project.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q", name)
	}
	return s
}

// argv is the service's whole command line: its entrypoint (from the
// compose file, else from its Dockerfile target) and its command.
func (b bundle) argv(t *testing.T, s types.ServiceConfig) []string {
	t.Helper()
	entry := []string(s.Entrypoint)
	if len(entry) == 0 && s.Build != nil {
		st := stageNamed(b.stages, s.Build.Target)
		if st == nil {
			t.Fatalf("service %s builds Dockerfile target %q, which does not exist", s.Name, s.Build.Target)
		}
		entry = st.entrypoint
	}
	return append(slices.Clone(entry), s.Command...)
}

// flags returns the --name=value and bare --name flags of args up to "--".
func flags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if name, ok := strings.CutPrefix(a, "--"); ok {
			k, v, _ := strings.Cut(name, "=")
			out[k] = v
		}
	}
	return out
}

func sortedSplit(s string) []string {
	parts := strings.Split(s, ",")
	slices.Sort(parts)
	return parts
}

func isJetflow(s types.ServiceConfig) bool {
	return s.Build != nil && slices.Contains(jetflowTargets, s.Build.Target)
}

// goModVersion returns the version go.mod requires of module (or the go
// directive's version when module is "go").
func goModVersion(t *testing.T, root, module string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+v?([0-9.]+)`)
	m := re.FindSubmatch(data)
	if m == nil {
		t.Fatalf("go.mod names no version of %s", module)
	}
	return string(m[1])
}

func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	return parts[0] + "." + parts[1]
}

func TestServices(t *testing.T) {
	b := setup(t)
	want := []string{"deploy", "dispatcher-1", "dispatcher-2", "nats-1", "nats-2", "nats-3", "worker-fraud", "worker-node", "worker-notify"}
	var got []string
	for name := range b.project.Services {
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	if _, ok := b.project.Networks["jetflow"]; !ok {
		t.Errorf("no network jetflow")
	}
	for name, s := range b.project.Services {
		if _, ok := s.Networks["jetflow"]; !ok || len(s.Networks) != 1 {
			t.Errorf("service %s is on networks %v, want only jetflow", name, s.Networks)
		}
	}
}

func TestNATSCluster(t *testing.T) {
	b := setup(t)
	image := "nats:" + goModVersion(t, b.root, "github.com/nats-io/nats-server/v2") + "-alpine"
	var routes []string
	for _, n := range natsServices {
		routes = append(routes, "nats://"+n+":6222")
	}
	for _, name := range natsServices {
		t.Run(name, func(t *testing.T) {
			s := b.service(t, name)
			if s.Image != image {
				t.Errorf("image %q, want %q (the version of the embedded nats-server in go.mod)", s.Image, image)
			}
			args := b.argv(t, s)
			f := flags(args)
			want := map[string]string{
				"name": name, "cluster_name": "jetflow", "cluster": "nats://0.0.0.0:6222",
				"jetstream": "", "store_dir": "/data", "http_port": "8222",
			}
			for k, v := range want {
				if got, ok := f[k]; !ok || got != v {
					t.Errorf("flag --%s is %q (given: %v), want %q; command %v", k, got, ok, v, args)
				}
			}
			if got := sortedSplit(f["routes"]); !slices.Equal(got, routes) {
				t.Errorf("--routes %v, want every node: %v", got, routes)
			}
			store := name + "-data"
			if _, ok := b.project.Volumes[store]; !ok {
				t.Errorf("volume %s is not declared", store)
			}
			if !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
				return v.Type == types.VolumeTypeVolume && v.Source == store && v.Target == "/data"
			}) {
				t.Errorf("volumes %+v: want the named volume %s at /data (the JetStream store)", s.Volumes, store)
			}
			hc := s.HealthCheck
			if hc == nil || hc.Disable || !strings.Contains(strings.Join(hc.Test, " "), ":8222/healthz") {
				t.Errorf("health check %+v: want one probing :8222/healthz", hc)
			}
		})
	}
}

// TestJetflowServicesUseTheCluster: every process of ours is given all
// three nodes, by --nats or JETFLOW_NATS_URL.
func TestJetflowServicesUseTheCluster(t *testing.T) {
	b := setup(t)
	n := 0
	for name, s := range b.project.Services {
		if !isJetflow(s) {
			continue
		}
		n++
		url := flags(b.argv(t, s))["nats"]
		if v, ok := s.Environment["JETFLOW_NATS_URL"]; ok && v != nil {
			if url != "" {
				t.Errorf("service %s gives both --nats and JETFLOW_NATS_URL", name)
			}
			url = *v
		}
		if got := sortedSplit(url); !slices.Equal(got, clusterURLs) {
			t.Errorf("service %s connects to %q, want %v", name, url, clusterURLs)
		}
	}
	if n != 6 {
		t.Errorf("%d services run jetflow images, want 6", n)
	}
}

func TestDispatchers(t *testing.T) {
	b := setup(t)
	var dispatchers []string
	for name, s := range b.project.Services {
		if args := b.argv(t, s); len(args) > 1 && args[0] == "jetflow" && args[1] == "dispatcher" {
			dispatchers = append(dispatchers, name)
		}
	}
	slices.Sort(dispatchers)
	if !slices.Equal(dispatchers, []string{"dispatcher-1", "dispatcher-2"}) {
		t.Fatalf("dispatcher services %v, want dispatcher-1 and dispatcher-2", dispatchers)
	}
	for _, name := range dispatchers {
		s := b.service(t, name)
		f := flags(b.argv(t, s))
		if f["replicas"] != "3" {
			t.Errorf("%s: --replicas=%q, want 3 (one replica per cluster node)", name, f["replicas"])
		}
		if _, ok := f["provision"]; !ok {
			t.Errorf("%s: no --provision: nothing else creates the streams and buckets", name)
		}
		if f["http"] != "0.0.0.0:7070" {
			t.Errorf("%s: --http=%q, want 0.0.0.0:7070", name, f["http"])
		}
		if hc := s.HealthCheck; hc == nil || hc.Disable || !strings.Contains(strings.Join(hc.Test, " "), ":7070/readyz") {
			t.Errorf("%s: health check %+v, want one probing :7070/readyz", name, hc)
		}
		for _, n := range natsServices {
			if d, ok := s.DependsOn[n]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: depends on %s with %+v, want condition service_healthy", name, n, d)
			}
		}
		if g := s.StopGracePeriod; g == nil || time.Duration(*g) <= 30*time.Second {
			t.Errorf("%s: stop_grace_period %v, want more than the 30s drain timeout", name, g)
		}
	}
}

func TestStartupOrderAndHealthChecks(t *testing.T) {
	b := setup(t)
	deploy := b.service(t, "deploy")
	for _, d := range []string{"dispatcher-1", "dispatcher-2"} {
		if dep, ok := deploy.DependsOn[d]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("deploy depends on %s with %+v, want service_healthy (the streams exist then)", d, dep)
		}
	}
	if deploy.Restart != types.RestartPolicyOnFailure {
		t.Errorf("deploy restarts %q, want on-failure (it is a one-shot job)", deploy.Restart)
	}
	// jetflow worker exec exposes no probe (no HTTP endpoint, no ready
	// file), so its containers have no health check.
	noProbe := []string{"deploy", "worker-fraud", "worker-notify"}
	for name, s := range b.project.Services {
		if strings.HasPrefix(name, "worker-") {
			if d, ok := s.DependsOn["deploy"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("%s depends on deploy with %+v, want service_completed_successfully (its consumers exist then)", name, d)
			}
		}
		hc := s.HealthCheck
		has := hc != nil && !hc.Disable && len(hc.Test) > 0
		if has == slices.Contains(noProbe, name) {
			t.Errorf("service %s: health check %+v; want one on every long-running service but %v", name, hc, noProbe)
		}
	}
	node := b.service(t, "worker-node")
	ready := node.Environment["JETFLOW_READY_FILE"]
	if ready == nil || node.HealthCheck == nil || !slices.Contains(node.HealthCheck.Test, *ready) {
		t.Errorf("worker-node: its health check %+v must test its JETFLOW_READY_FILE %v", node.HealthCheck, ready)
	}
}

// TestCommandLinesParse runs every jetflow command line of the compose
// file through the real CLI with --help: an unknown verb or flag fails.
func TestCommandLinesParse(t *testing.T) {
	b := setup(t)
	for name, s := range b.project.Services {
		args := b.argv(t, s)
		if len(args) == 0 || args[0] != "jetflow" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			args := slices.Clone(args[1:])
			if i := slices.Index(args, "--"); i >= 0 {
				args = slices.Insert(args, i, "--help")
			} else {
				args = append(args, "--help")
			}
			var out, errOut bytes.Buffer
			if code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(out.String(), "Usage:") {
				t.Errorf("jetflow %v: exit %d, %s%s", args, code, errOut.String(), out.String())
			}
		})
	}
}

// TestEveryTaskIsServed checks that the deployed workflow's every task
// version has a worker, and that the files the services name are where
// the images put them.
func TestEveryTaskIsServed(t *testing.T) {
	b := setup(t)
	data, err := os.ReadFile(filepath.Join(b.root, "examples", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := value.Decode(data, value.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	info, err := fleet.Validate(doc)
	if err != nil {
		t.Fatal(err)
	}
	if args := b.argv(t, b.service(t, "deploy")); !slices.Equal(args[:4], []string{"jetflow", "deploy", "order", "/usr/share/jetflow/examples/order.json"}) {
		t.Errorf("deploy runs %v, want jetflow deploy order /usr/share/jetflow/examples/order.json", args)
	}
	if st := stageNamed(b.stages, "jetflow"); st == nil || !st.has("COPY", "examples/order.json", "/usr/share/jetflow/examples/") {
		t.Errorf("the jetflow image does not copy examples/order.json to /usr/share/jetflow/examples/")
	}

	served := map[string]string{}
	tasksJS, err := os.ReadFile(filepath.Join(b.root, "examples", "workers", "node", "tasks.js"))
	if err != nil {
		t.Fatal(err)
	}
	if v := b.service(t, "worker-node").Environment["JETFLOW_TASKS"]; v != nil {
		for _, tv := range strings.Split(*v, ",") {
			served[tv] = "worker-node"
			if !strings.Contains(string(tasksJS), `"`+tv+`"`) {
				t.Errorf("worker-node serves %s, which examples/workers/node/tasks.js has no handler for", tv)
			}
		}
	}
	for _, name := range []string{"worker-fraud", "worker-notify"} {
		args := b.argv(t, b.service(t, name))
		served[flags(args)["task"]] = name
		script := args[len(args)-1]
		if _, err := os.Stat(filepath.Join(b.root, "examples", "workers", "shell", script)); err != nil {
			t.Errorf("%s runs %s, which examples/workers/shell (copied to /app) lacks: %v", name, script, err)
		}
	}
	for _, task := range info.Tasks {
		tv := task.Task + "@" + task.Version
		if served[tv] == "" {
			t.Errorf("no worker serves %s of examples/order.json (served: %v)", tv, served)
		}
	}
}

func TestDockerfile(t *testing.T) {
	b := setup(t)
	var names []string
	for _, s := range b.stages {
		names = append(names, s.name)
	}
	if want := []string{"build", "worker-exec", "worker-node", "jetflow"}; !slices.Equal(names, want) {
		t.Fatalf("Dockerfile stages %v, want %v (jetflow last: the default target)", names, want)
	}
	build := stageNamed(b.stages, "build")
	goMinor := minor(goModVersion(t, b.root, "go"))
	if !strings.HasPrefix(build.from, "golang:${GO_VERSION}") {
		t.Errorf("build stage is FROM %s, want golang:${GO_VERSION}...", build.from)
	}
	data, err := os.ReadFile(filepath.Join(b.root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "ARG GO_VERSION="+goMinor+"\n") {
		t.Errorf("Dockerfile does not build with Go %s (go.mod's)", goMinor)
	}
	if !build.has("CGO_ENABLED=0", "go build", "-o /out/jetflow", "./cmd/jetflow") {
		t.Errorf("the build stage does not build a static ./cmd/jetflow (CGO_ENABLED=0) into /out/jetflow")
	}
	for _, name := range []string{"worker-exec", "jetflow"} {
		if st := stageNamed(b.stages, name); !st.has("COPY --from=build /out/jetflow /usr/local/bin/jetflow") {
			t.Errorf("stage %s does not copy the built binary", name)
		}
	}
	if got := stageNamed(b.stages, "jetflow").entrypoint; !slices.Equal(got, []string{"jetflow"}) {
		t.Errorf("jetflow entrypoint %v", got)
	}
	if got := stageNamed(b.stages, "worker-exec").entrypoint; !slices.Equal(got, []string{"jetflow", "worker", "exec"}) {
		t.Errorf("worker-exec entrypoint %v", got)
	}
	if st := stageNamed(b.stages, "worker-node"); !st.has("package-lock.json") || !st.has("npm ci") {
		t.Errorf("worker-node does not install from the lock file with npm ci")
	}
	if st := stageNamed(b.stages, "worker-exec"); !strings.HasPrefix(st.from, "python:") {
		t.Errorf("worker-exec is FROM %s; score_fraud.py needs python3", st.from)
	}
}
