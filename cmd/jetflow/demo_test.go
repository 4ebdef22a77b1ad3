package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `jetflow demo` as a user would, with nothing else
// running, and checks that every run ended as expected.
func TestDemo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "demo", "--timeout", "60s")
	cmd.Env = testEnv(nil)
	cmd.Dir = t.TempDir() // the binary needs nothing from the repository
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	t.Logf("demo took %s", time.Since(began).Round(time.Millisecond))
	want := []string{
		"✓ order-paid ended in done",
		"check → decide → await-payment → fulfil → fulfil/ship → fulfil/notify → fulfil/sent → done",
		"ship ✓  notify ✓",                         // "ship ↻" before it unless the watch skipped that record
		"tasks   stock ✓  price ✓  fraud ✓  ship ", // the document's order, not the settling's
		"✓ order-no-stock ended in rejected",
		"✓ order-risky ended in rejected",
		"✓ order-unpaid ended in expired",
		"path    check → decide → await-payment → expired",
		"✓ order-unknown ended in rejected",
		"path    check → rejected",
		`"nodeId":"stock"`,
		"All 5 runs ended as expected",
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("demo output lacks %q:\n%s", w, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n    result  "); n != 5 {
		t.Errorf("%d result lines, want 5:\n%s", n, out.String())
	}
}

// TestDemoDocumentIsTheExample keeps the demo's embedded workflow equal to
// examples/order.json but for the payment wait's timeout.
func TestDemoDocumentIsTheExample(t *testing.T) {
	t.Parallel()
	read := func(path string) map[string]any {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return doc
	}
	example, demo := read("../../examples/order.json"), read("cli/demo_order.json")
	after := func(doc map[string]any) map[string]any {
		return doc["states"].(map[string]any)["await-payment"].(map[string]any)["after"].(map[string]any)
	}
	if ms := after(demo)["ms"]; ms != 1500.0 {
		t.Errorf("the demo's payment wait is %v ms, want 1500 (demo.go's demoPaymentWait)", ms)
	}
	after(demo)["ms"] = after(example)["ms"]
	if !reflect.DeepEqual(example, demo) {
		t.Error("cmd/jetflow/cli/demo_order.json differs from examples/order.json beyond the payment timeout; copy it again and set after.ms to 1500")
	}
}
