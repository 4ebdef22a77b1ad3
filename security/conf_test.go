package security

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
)

var update = flag.Bool("update", false, "rewrite docs/security/nats-server.conf")

const docConf = "../docs/security/nats-server.conf"

// TestDocConfigIsCurrent keeps the documented configuration equal to what
// this package generates, so that it cannot drift from subjects.Names.
func TestDocConfigIsCurrent(t *testing.T) {
	t.Parallel()
	c, err := DocConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := c.Render()
	if *update {
		if err := os.MkdirAll(filepath.Dir(docConf), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(docConf, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(docConf)
	if err != nil {
		t.Fatalf("%v (run go test ./security -run TestDocConfigIsCurrent -update)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date: run go test ./security -run TestDocConfigIsCurrent -update", docConf)
	}
}

// TestDocConfigLoads parses the documented file as nats-server does, with
// the variables set, and checks what it sets up.
func TestDocConfigLoads(t *testing.T) {
	t.Parallel()
	c, err := DocConfig()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(docConf)
	if err != nil {
		t.Fatal(err)
	}
	p := newPKI(t)
	var vars strings.Builder
	for _, u := range c.Users {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		fmt.Fprintf(&vars, "%s: %q\n", NKeyVar(u.Name), pub)
	}
	fmt.Fprintf(&vars, "JETFLOW_TLS_CERT: %q\nJETFLOW_TLS_KEY: %q\n", p.cert, p.key)
	o := &server.Options{}
	if err := o.ProcessConfigString(vars.String() + string(data)); err != nil {
		t.Fatal(err)
	}
	if o.TLSConfig == nil || o.AllowNonTLS {
		t.Error("TLS is not required")
	}
	if o.Host != "127.0.0.1" || o.MaxPayload != 1<<20 || !o.JetStream {
		t.Errorf("listen %s, max_payload %d, jetstream %v", o.Host, o.MaxPayload, o.JetStream)
	}
	if len(o.Nkeys) != len(c.Users) || len(o.Users) != 0 || o.NoAuthUser != "" {
		t.Errorf("%d nkey users, %d password users, no_auth_user %q; want %d, 0, none", len(o.Nkeys), len(o.Users), o.NoAuthUser, len(c.Users))
	}
	for _, nk := range o.Nkeys {
		if nk.Permissions == nil || nk.Permissions.Publish == nil || nk.Permissions.Subscribe == nil || nk.Account == nil || nk.Account.Name != "JETFLOW" {
			t.Errorf("user %s has no permissions or account", nk.Nkey)
		}
	}
}

func TestRoleRefusals(t *testing.T) {
	t.Parallel()
	n := subjects.Must("")
	if _, err := Worker(n, "w", "a.b", "1"); err == nil {
		t.Error("a task name with '.' made a worker role")
	}
	if _, err := Worker(n, "w", "a", "1 0"); err == nil {
		t.Error("a bad version made a worker role")
	}
	if _, err := Publisher(n, "p", subjects.KindResult); err == nil {
		t.Error("a publisher was allowed to publish results")
	}
	if p, err := Publisher(n, "ops", subjects.KindRedrive); err != nil || !slices.Contains(p.Publish, n.Redrive("*")) {
		t.Errorf("a publisher granted redrives: %+v, %v", p, err)
	}
	if p, err := Publisher(n, "ops", subjects.KindReset); err != nil || !slices.Contains(p.Publish, n.Reset("*")) {
		t.Errorf("a publisher granted resets: %+v, %v", p, err)
	}
	users, err := DeploymentUsers(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		// The dispatchers publish the redrives of the bulk jobs they
		// carry out; no other fixed role may.
		if u.Name != UserOperator && u.Name != UserDispatcher && slices.Contains(u.Permissions.Publish, n.Redrive("*")) {
			t.Errorf("fixed role %s may redrive; only the operator (and the dispatchers, for bulk jobs) may", u.Name)
		}
		if u.Name != UserOperator && slices.Contains(u.Permissions.Publish, n.Reset("*")) {
			t.Errorf("fixed role %s may reset runs; only the operator may", u.Name)
		}
		// The dispatchers check and send the migrations of migration
		// jobs; no other fixed role may move a run between revisions.
		migrates := slices.Contains(u.Permissions.Publish, n.Migrate("*"))
		if migrates != (u.Name == UserDispatcher) {
			t.Errorf("fixed role %s may publish migrations: %v; only the dispatcher (and the operator, through >) may", u.Name, migrates)
		}
	}
	if _, err := DeploymentUsers(n, []registry.TaskRef{{Task: "a-b", Version: "1"}, {Task: "a_b", Version: "1"}}); err == nil {
		t.Error("two users sharing one nkey variable were accepted")
	}
}

// TestOnlyDispatchersTouchState reads the generated permissions: no role
// but the dispatcher (and the operator) may write run records, publish
// invocations, read the token secret, touch the timer stream, purge the
// input stream (retention), the archive and the payload bucket, or write
// and purge the run index, no role may purge any other stream, and no role
// but workers and the dispatcher (a child run's result to its parent) may
// publish results.
func TestOnlyDispatchersTouchState(t *testing.T) {
	t.Parallel()
	n := subjects.Must("")
	users, err := DeploymentUsers(n, DocTasks)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == UserOperator {
			continue
		}
		for _, s := range u.Permissions.Publish {
			switch {
			case u.Name != UserDispatcher && (strings.HasPrefix(s, "$KV.") || s == n.TaskAll() || strings.Contains(s, "secret")):
				t.Errorf("%s may publish %s", u.Name, s)
			case !strings.HasPrefix(u.Name, "worker_") && u.Name != UserDispatcher && s == n.Result("*"):
				// The dispatcher sends a settled child run's result to its
				// parent (docs/CHILDREN.md).
				t.Errorf("%s may publish results", u.Name)
			case s == n.Timer("*") || s == ">" || s == n.InputAll():
				t.Errorf("%s may publish %s", u.Name, s)
			case u.Name != UserDispatcher && (s == n.ScheduleAll() || strings.Contains(s, n.TimerStream()) || strings.Contains(s, ".fired.")):
				t.Errorf("%s may use the timer stream: %s", u.Name, s)
			case strings.HasPrefix(s, "$JS.API.STREAM.PURGE.") && (u.Name != UserDispatcher ||
				s != "$JS.API.STREAM.PURGE."+n.TimerStream() && s != "$JS.API.STREAM.PURGE."+n.InputStream() && s != "$JS.API.STREAM.PURGE."+n.ObjectStream(n.ArchiveBucket()) && s != "$JS.API.STREAM.PURGE."+n.IndexStream() &&
					s != "$JS.API.STREAM.PURGE."+n.ObjectStream(n.PayloadBucket())):
				t.Errorf("%s may purge %s", u.Name, s)
			case u.Name != UserDispatcher && strings.HasPrefix(s, n.Prefix()+".idx."):
				t.Errorf("%s may write the run index: %s", u.Name, s)
			}
		}
		for _, s := range u.Permissions.Subscribe {
			if strings.HasPrefix(s, "_INBOX") && s != InboxPrefix(u.Name)+".>" {
				t.Errorf("%s may read the inbox %s", u.Name, s)
			}
		}
	}
}
