package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/simtest"
)

// TestDifferential compares `jetflow simulate` with the reference on a
// file of generated scenarios (conformance/differential-simulate.mjs). It
// runs only when JETFLOW_SIM_DIFF names such a file:
//
//	node conformance/differential-simulate.mjs --seed 1 --count 2000 > /tmp/sim.jsonl
//	JETFLOW_SIM_DIFF=/tmp/sim.jsonl go test ./engine/sim -run TestDifferential -v
//
// A scenario agrees when simtest.Diff finds nothing, as for the corpus. It
// prints the counts, then up to JETFLOW_DIFF_SHOW (default 3) examples per
// class, where a class is the shape of the first differing JSON Pointer
// and the error codes involved.
func TestDifferential(t *testing.T) {
	path := os.Getenv("JETFLOW_SIM_DIFF")
	if path == "" {
		t.Skip("set JETFLOW_SIM_DIFF to a file written by conformance/differential-simulate.mjs")
	}
	show := 3
	if s := os.Getenv("JETFLOW_DIFF_SHOW"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("JETFLOW_DIFF_SHOW: %v", err)
		}
		show = n
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	total := 0
	classes := map[string][]string{}
	for sc.Scan() {
		var l struct {
			Name     string          `json:"name"`
			Scenario json.RawMessage `json:"scenario"`
			Output   json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		total++
		class, msg := differentialRun(l.Scenario, l.Output)
		if class == "" {
			continue
		}
		example := ""
		if len(classes[class]) < show {
			example = fmt.Sprintf("%s\n    scenario %s\n    %s", l.Name, l.Scenario, strings.ReplaceAll(msg, "\n", "\n    "))
		}
		classes[class] = append(classes[class], example)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(classes))
	differ := 0
	for c := range classes {
		names = append(names, c)
		differ += len(classes[c])
	}
	sort.Strings(names)
	t.Logf("%d scenarios, %d disagree, in %d classes", total, differ, len(names))
	for _, c := range names {
		var b strings.Builder
		fmt.Fprintf(&b, "class %s: %d\n", c, len(classes[c]))
		for _, e := range classes[c] {
			if e != "" {
				b.WriteString("  " + e + "\n")
			}
		}
		t.Log(b.String())
	}
	if differ > 0 {
		t.Errorf("%d of %d scenarios disagree with the reference", differ, total)
	}
}

// differentialRun runs one scenario and names its class of disagreement
// ("" when it agrees); a panic or a refusal is a disagreement too.
func differentialRun(scenario, golden []byte) (class, msg string) {
	defer func() {
		if r := recover(); r != nil {
			class, msg = "panic", fmt.Sprint(r)
		}
	}()
	got, err := RunJSON(scenario)
	if err != nil {
		return "go refused", err.Error()
	}
	m, err := simtest.Diff(golden, []byte(got))
	if err != nil {
		return "golden unusable", err.Error()
	}
	if m == nil {
		return "", ""
	}
	return diffClass(m, golden, got), m.Error()
}

var (
	index  = regexp.MustCompile(`/[0-9]+(/|$)`)
	jfCode = regexp.MustCompile(`JF[0-9]{4}`)
)

// diffClass is the pointer's shape (indices as N, cut after the member
// that differs at the snapshot or result level) with the error codes of
// the golden and of jetflow at the first differing call.
func diffClass(m *simtest.Mismatch, golden []byte, got string) string {
	shape := m.Pointer
	for index.MatchString(shape) {
		shape = index.ReplaceAllString(shape, "/N$1")
	}
	if parts := strings.Split(shape, "/"); len(parts) > 6 {
		shape = strings.Join(parts[:6], "/") + "/…"
	}
	return fmt.Sprintf("%s want=%s got=%s", shape, codeAt(m.Pointer, golden), codeAt(m.Pointer, []byte(got)))
}

// codeAt is the error code of the call (or compile error) the pointer
// names in an output line, "-" when there is none.
func codeAt(pointer string, output []byte) string {
	var out struct {
		Calls        []json.RawMessage `json:"calls"`
		CompileError json.RawMessage   `json:"compileError"`
	}
	if json.Unmarshal(output, &out) != nil {
		return "?"
	}
	entry := out.CompileError
	var i int
	if _, err := fmt.Sscanf(pointer, "/calls/%d", &i); err == nil && i < len(out.Calls) {
		entry = out.Calls[i]
	}
	if c := jfCode.Find(entry); c != nil {
		return string(c)
	}
	return "-"
}

// TestDifferentialClasses checks that a disagreement is found and classed,
// so that TestDifferential cannot pass vacuously.
func TestDifferentialClasses(t *testing.T) {
	t.Parallel()
	const scenario = `{"document":{"$workflow":"0.2","revision":"r","initial":"a","states":{` +
		`"a":{"work":{"task":"t","version":"1"},"then":"b"},"b":{"final":true}}},` +
		`"input":{"n":1},"tasks":{"t":{"version":"1","error":"boom"}},"calls":[{},{"now":5}]}`
	got, err := RunJSON([]byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		golden string
		class  string
	}{
		{name: "agrees", golden: got},
		{name: "other code", golden: strings.Replace(got, `"code":"JF2006"`, `"code":"JF2015"`, 1), class: "/calls/N/error/code want=JF2015 got=JF2006"},
		{name: "other path", golden: strings.Replace(got, `"path":"/nodes/task"`, `"path":"/nodes/x"`, 1), class: "/calls/N/error/path want=JF2006 got=JF2006"},
		{
			name:   "success expected",
			golden: `{"calls":[{"status":"done","result":null,"snapshot":{}},{"status":"done","result":null,"snapshot":{}}]}`,
			class:  "/calls/N/error want=- got=JF2006",
		},
		{name: "compile error expected", golden: `{"compileError":{"code":"JF0021","path":"","message":"x"}}`, class: "/calls want=JF0021 got=-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			class, msg := differentialRun([]byte(scenario), []byte(tt.golden))
			if class != tt.class {
				t.Fatalf("class %q, want %q (%s)", class, tt.class, msg)
			}
		})
	}
}
