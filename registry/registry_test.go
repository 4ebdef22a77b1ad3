package registry_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
)

// fakeValidate stands in for the engine: it wants "$workflow": "0.2" and
// reports the tasks named by states.*.work.
func fakeValidate(doc any) (registry.Info, error) {
	obj, ok := doc.(map[string]any)
	if !ok || obj["$workflow"] != "0.2" {
		return registry.Info{}, fault.New(fault.JF0001, "not a jaren-workflow 0.2 document", "")
	}
	var info registry.Info
	states, _ := obj["states"].(map[string]any)
	for _, k := range value.Keys(states) {
		st, _ := states[k].(map[string]any)
		if w, ok := st["work"].(map[string]any); ok {
			task, _ := w["task"].(string)
			version, _ := w["version"].(string)
			info.Tasks = append(info.Tasks, registry.TaskRef{Task: task, Version: version})
		}
	}
	return info, nil
}

func workflowDoc(revision, task string) []byte {
	return fmt.Appendf(nil, `{"$workflow":"0.2","revision":%q,"initial":"a","states":{
		"b":{"work":{"task":%q,"version":"1.0"},"then":"a"},
		"a":{"work":{"task":"charge","version":"2"},"then":"z"},
		"c":{"work":{"task":"charge","version":"2"},"then":"z"},
		"z":{"final":true,"note":"<&>"}}}`, revision, task)
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

func openRegistry(t *testing.T, b bundle) *registry.Registry {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	r, err := registry.OpenRegistry(b.ctx, b.js, b.names, registry.RegistryConfig{Validate: fakeValidate, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryDeployAndRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)

	doc := workflowDoc("review/1", "prepare")
	d, err := r.Deploy(b.ctx, "orders", doc)
	if err != nil {
		t.Fatal(err)
	}
	decoded, _ := value.Decode(doc, value.Limits{})
	canon := value.MustCanonical(decoded)
	sum := sha256.Sum256([]byte(canon))
	wantTasks := []registry.TaskRef{{Task: "charge", Version: "2"}, {Task: "prepare", Version: "1.0"}}
	wantSubjects := []string{b.names.Task("charge", "2"), b.names.Task("prepare", "1.0")}
	if d.Name != "orders" || d.Revision != "review/1" || d.Hash != hex.EncodeToString(sum[:]) ||
		string(d.Doc) != canon || !slices.Equal(d.Tasks, wantTasks) || !slices.Equal(d.TaskSubjects, wantSubjects) || d.Deployed.IsZero() {
		t.Fatalf("Deploy = %+v", d)
	}
	if !strings.Contains(string(d.Doc), `"<&>"`) {
		t.Fatalf("canonical document lost its text: %s", d.Doc)
	}

	got, err := r.Get(b.ctx, "orders")
	if err != nil || !sameDeployment(got, d) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	byHash, err := r.GetByHash(b.ctx, d.Hash)
	if err != nil || byHash.Hash != d.Hash || string(byHash.Doc) != canon || !slices.Equal(byHash.TaskSubjects, wantSubjects) {
		t.Fatalf("GetByHash = %+v, %v", byHash, err)
	}
	if rev, err := r.GetRevision(b.ctx, "orders", "review/1"); err != nil || !sameDeployment(rev, d) {
		t.Fatalf("GetRevision = %+v, %v", rev, err)
	}

	if _, err := r.Get(b.ctx, "missing"); !errors.Is(err, registry.ErrWorkflowNotFound) {
		t.Errorf("Get of a missing workflow = %v", err)
	}
	if _, err := r.GetRevision(b.ctx, "orders", "review/9"); !errors.Is(err, registry.ErrWorkflowNotFound) {
		t.Errorf("GetRevision of a missing revision = %v", err)
	}
	for _, h := range []string{"nothex", strings.Repeat("0", 64)} {
		if _, err := r.GetByHash(b.ctx, h); !errors.Is(err, registry.ErrDocumentNotFound) {
			t.Errorf("GetByHash(%q) = %v", h, err)
		}
	}
}

func sameDeployment(a, b registry.Deployment) bool {
	return a.Name == b.Name && a.Revision == b.Revision && a.Hash == b.Hash && string(a.Doc) == string(b.Doc) &&
		slices.Equal(a.Tasks, b.Tasks) && slices.Equal(a.TaskSubjects, b.TaskSubjects) && a.Deployed.Equal(b.Deployed)
}

// Revisions accumulate; redeploying a known document changes nothing;
// a revision never changes its document.
func TestRegistryRevisionsAreImmutable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)

	v1, err := r.Deploy(b.ctx, "orders", workflowDoc("1", "prepare"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := r.Deploy(b.ctx, "orders", workflowDoc("2", "prepare"))
	if err != nil {
		t.Fatal(err)
	}
	// The same document with other white space and member order.
	same := []byte(strings.ReplaceAll(string(workflowDoc("1", "prepare")), "\n", "\n   "))
	again, err := r.Deploy(b.ctx, "orders", same)
	if err != nil || !sameDeployment(again, v1) {
		t.Fatalf("redeploy of revision 1 = %+v, %v; want the original %+v", again, err, v1)
	}
	_, err = r.Deploy(b.ctx, "orders", workflowDoc("1", "other-task"))
	if !errors.Is(err, registry.ErrRevisionImmutable) || !strings.Contains(err.Error(), v1.Hash) {
		t.Fatalf("a changed revision 1 = %v, want ErrRevisionImmutable naming %s", err, v1.Hash)
	}
	if latest, _ := r.Get(b.ctx, "orders"); !sameDeployment(latest, v2) {
		t.Fatalf("latest = %+v, want revision 2", latest)
	}
	if old, _ := r.GetByHash(b.ctx, v1.Hash); string(old.Doc) != string(v1.Doc) {
		t.Fatal("revision 1's document changed")
	}
	// The same document under another name is its own deployment.
	if other, err := r.Deploy(b.ctx, "billing", workflowDoc("2", "prepare")); err != nil || other.Hash != v2.Hash || other.Name != "billing" {
		t.Fatalf("deploy under a second name = %+v, %v", other, err)
	}

	list, err := r.List(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "billing" || list[1].Name != "orders" || len(list[1].Revisions) != 2 ||
		list[1].Latest().Revision != "2" || list[1].Revisions[0].Hash != v1.Hash {
		t.Fatalf("List = %+v", list)
	}
}

func TestRegistryRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)
	cases := []struct {
		name, doc string
		want      error
		text      string
	}{
		{"a.b", string(workflowDoc("1", "x")), subjects.ErrInvalid, "workflow name"},
		{"w", `{"$workflow":"0.1"}`, fault.New(fault.JF0001, "", ""), "JF0001"},
		{"w", `{"$workflow":"0.2"`, nil, "invalid JSON"},
		{"w", `{"$workflow":"0.2","states":{}}`, nil, `"revision"`},
		{"w", `{"$workflow":"0.2","revision":"1","states":{"a":{"work":{"task":"bad.task","version":"1"}}}}`, subjects.ErrInvalid, "task name"},
	}
	for _, c := range cases {
		_, err := r.Deploy(b.ctx, c.name, []byte(c.doc))
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("Deploy(%q, %s) = %v, want %v mentioning %q", c.name, c.doc, err, c.want, c.text)
		}
	}
	var fe *fault.Error
	if _, err := r.Deploy(b.ctx, "w", []byte(`[]`)); !errors.As(err, &fe) || fe.Code != fault.JF0001 {
		t.Errorf("the engine's error is not reachable: %v", err)
	}
	if list, err := r.List(b.ctx); err != nil || len(list) != 0 {
		t.Errorf("refused deploys left %+v, %v", list, err)
	}
	noValidate, err := registry.OpenRegistry(b.ctx, b.js, b.names, registry.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noValidate.Deploy(b.ctx, "w", workflowDoc("1", "x")); err == nil || !strings.Contains(err.Error(), "Validate") {
		t.Errorf("Deploy without Validate = %v", err)
	}
}

// Concurrent deploys to one name all land (compare-and-swap retries), and
// of two different documents claiming one revision exactly one wins.
func TestRegistryConcurrentDeploys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)

	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = r.Deploy(b.ctx, "orders", workflowDoc(fmt.Sprint(i), "prepare")) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("deploy %d: %v", i, err)
		}
	}
	list, err := r.List(b.ctx)
	if err != nil || len(list) != 1 || len(list[0].Revisions) != n {
		t.Fatalf("List = %+v, %v; want %d revisions", list, err, n)
	}

	for i := range n {
		wg.Go(func() { _, errs[i] = r.Deploy(b.ctx, "contested", workflowDoc("1", fmt.Sprintf("task%d", i))) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, registry.ErrRevisionImmutable):
			t.Fatalf("contested deploy %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d documents won revision 1", won)
	}
}

func TestOpenBeforeProvision(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	names := subjects.Must("t")
	if _, err := registry.OpenRegistry(ctx, js, names, registry.RegistryConfig{}); !errors.Is(err, kvstore.ErrNotProvisioned) || !strings.Contains(err.Error(), names.WorkflowBucket()) {
		t.Errorf("OpenRegistry = %v", err)
	}
}
