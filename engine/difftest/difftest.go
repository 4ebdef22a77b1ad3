// Package difftest is test support for the differential runs of the
// engine's areas: it reads a file of generated cases with the reference's
// answers (one JSON line each, written by a conformance/differential*.mjs
// script), tallies the disagreements by class and reports them. It is
// imported only by tests.
package difftest

import (
	"bufio"
	"fmt"
	"iter"
	"os"
	"sort"
	"strings"
	"testing"
)

// Lines yields the lines of the file the environment variable env names.
// It skips the test when env is unset: a differential run is never part of
// a plain go test.
func Lines(t testing.TB, env, script string) iter.Seq[[]byte] {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Skipf("set %s to a file written by conformance/%s", env, script)
	}
	return func(yield func([]byte) bool) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if !yield(sc.Bytes()) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// Tally counts a differential run: cases per family, and the cases that
// disagree or differ as documented per class, with a few examples of each.
type Tally struct {
	unit     string
	show     int
	families map[string]*counts
	classes  map[string]*class
}

type counts struct{ compared, disagree, documented, crashed int }

type class struct {
	cases    int
	examples []string
}

// New starts a tally of cases called unit ("documents", "scenarios"). It
// keeps JETFLOW_DIFF_SHOW examples per class (default 5).
func New(t testing.TB, unit string) *Tally {
	t.Helper()
	show := 5
	if s := os.Getenv("JETFLOW_DIFF_SHOW"); s != "" {
		if _, err := fmt.Sscan(s, &show); err != nil {
			t.Fatalf("JETFLOW_DIFF_SHOW=%q: %v", s, err)
		}
	}
	return &Tally{unit: unit, show: show, families: map[string]*counts{}, classes: map[string]*class{}}
}

func (y *Tally) family(name string) *counts {
	c := y.families[name]
	if c == nil {
		c = &counts{}
		y.families[name] = c
	}
	return c
}

// Crashed counts a case the reference answered with a plain JavaScript
// error rather than a coded one: a defect of its own, not an answer to
// compare.
func (y *Tally) Crashed(family string) { y.family(family).crashed++ }

// Agree counts a case that agrees.
func (y *Tally) Agree(family string) { y.family(family).compared++ }

// Disagree counts a case that disagrees, once in each distinct class it
// falls in; example is asked only while a class wants more examples.
func (y *Tally) Disagree(family string, classes []string, example func() string) {
	c := y.family(family)
	c.compared++
	c.disagree++
	y.add(family, classes, example)
}

// Documented counts a case that differs in a way conformance/README.md
// documents; it is reported but fails nothing.
func (y *Tally) Documented(family, class string, example func() string) {
	c := y.family(family)
	c.compared++
	c.documented++
	y.add(family, []string{"documented: " + class}, example)
}

func (y *Tally) add(family string, classes []string, example func() string) {
	seen := map[string]bool{}
	for _, name := range classes {
		if family != "" {
			name = family + " " + name
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		c := y.classes[name]
		if c == nil {
			c = &class{}
			y.classes[name] = c
		}
		c.cases++
		if len(c.examples) < y.show {
			c.examples = append(c.examples, example())
		}
	}
}

// Report logs the counts per family and each class with its examples, and
// fails the test when any case disagrees, or when none was compared (an
// empty file, or one the reference only crashed on, proves nothing).
func (y *Tally) Report(t testing.TB) {
	t.Helper()
	total, compared := 0, 0
	for _, name := range sorted(y.families) {
		c := y.families[name]
		label := ""
		if name != "" {
			label = fmt.Sprintf("%-10s ", name)
		}
		t.Logf("%s%6d %s, %5d disagree, %d differ as documented, %d the reference crashed on",
			label, c.compared, y.unit, c.disagree, c.documented, c.crashed)
		total += c.disagree
		compared += c.compared
	}
	for _, name := range sorted(y.classes) {
		c := y.classes[name]
		var b strings.Builder
		fmt.Fprintf(&b, "class %s: %d\n", name, c.cases)
		for _, e := range c.examples {
			b.WriteString("  " + strings.ReplaceAll(e, "\n", "\n  ") + "\n")
		}
		t.Log(b.String())
	}
	if total > 0 {
		t.Errorf("%d %s disagree with the reference", total, y.unit)
	}
	if compared == 0 {
		t.Errorf("no %s compared", y.unit)
	}
}

// Guard runs f and turns a panic into what onPanic makes of it: a panic is
// a disagreement too, and must not end the run.
func Guard[T any](f func() T, onPanic func(r any) T) (out T) {
	defer func() {
		if r := recover(); r != nil {
			out = onPanic(r)
		}
	}()
	return f()
}

// Clip shortens an example's text to n bytes.
func Clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func sorted[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
