package engine_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the imports that would let the engine reach the world.
var forbidden = []string{
	"os", "os/exec", "os/signal", "net", "net/http", "io/ioutil", "syscall", "time",
	"math/rand", "math/rand/v2", "crypto/rand", "log", "log/slog",
	"github.com/nats-io/", "github.com/jetflow/jetflow/dispatcher", "github.com/jetflow/jetflow/kvstore",
	"github.com/jetflow/jetflow/worker", "github.com/jetflow/jetflow/subjects", "github.com/jetflow/jetflow/wire",
	"github.com/jetflow/jetflow/embedded", "github.com/jetflow/jetflow/cmd",
}

func TestEngineIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "github.com/jetflow/jetflow/engine/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	packages := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if testSupport(p.ImportPath) {
			continue // reads corpora and differential files from disk
		}
		packages++
		for _, imp := range p.Imports {
			if testSupport(imp) {
				t.Errorf("%s imports %s, which only tests may import", p.ImportPath, imp)
			}
			for _, bad := range forbidden {
				if imp == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(imp, bad)) || (strings.HasPrefix(bad, "github.com/jetflow/") && strings.HasPrefix(imp, bad)) {
					t.Errorf("%s imports %s: the engine must stay pure (no I/O, clock, goroutines, NATS or fleet packages)", p.ImportPath, imp)
				}
			}
		}
	}
	if packages < 3 {
		t.Fatalf("checked only %d engine packages", packages)
	}
}

// testSupport reports the engine's packages that only its tests import.
func testSupport(path string) bool {
	return strings.HasSuffix(path, "/engine/simtest") || strings.HasSuffix(path, "/engine/difftest")
}
