package difftest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Report logs and whether it failed.
type recorder struct {
	testing.TB
	logs   []string
	failed bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Log(a ...any)              { r.logs = append(r.logs, fmt.Sprint(a...)) }
func (r *recorder) Logf(f string, a ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Errorf(f string, a ...any) { r.failed = true; r.Logf(f, a...) }

func TestTally(t *testing.T) {
	t.Setenv("JETFLOW_DIFF_SHOW", "1")
	asked := 0
	example := func() string { asked++; return fmt.Sprint("case ", asked) }
	tests := []struct {
		name   string
		run    func(y *Tally)
		failed bool
		want   []string
	}{
		{
			name:   "nothing compared",
			run:    func(y *Tally) { y.Crashed("a") },
			failed: true,
			want: []string{
				"a               0 cases,     0 disagree, 0 differ as documented, 1 the reference crashed on",
				"no cases compared",
			},
		},
		{
			name:   "all agree",
			run:    func(y *Tally) { y.Agree("a"); y.Agree("a"); y.Crashed("a") },
			failed: false,
			want:   []string{"a               2 cases,     0 disagree, 0 differ as documented, 1 the reference crashed on"},
		},
		{
			name: "documented differences fail nothing",
			run: func(y *Tally) {
				y.Documented("", "depth", example)
				y.Agree("")
			},
			failed: false,
			want:   []string{"     2 cases,     0 disagree, 1 differ as documented, 0 the reference crashed on", "class documented: depth: 1\n  case 1\n"},
		},
		{
			name: "a case counts once per class, examples stop at the limit",
			run: func(y *Tally) {
				y.Disagree("f", []string{"code", "code", "path"}, example)
				y.Disagree("f", []string{"code"}, example)
			},
			failed: true,
			want: []string{
				"f               2 cases,     2 disagree, 0 differ as documented, 0 the reference crashed on",
				"class f code: 2\n  case 1\n",
				"class f path: 1\n  case 2\n",
				"2 cases disagree with the reference",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = 0
			r := &recorder{TB: t}
			y := New(t, "cases")
			tt.run(y)
			y.Report(r)
			if r.failed != tt.failed {
				t.Errorf("failed = %v, want %v", r.failed, tt.failed)
			}
			if got := strings.Join(r.logs, "|"); got != strings.Join(tt.want, "|") {
				t.Errorf("logged\n%q\nwant\n%q", r.logs, tt.want)
			}
		})
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	got := Guard(func() string { panic("boom") }, func(r any) string { return fmt.Sprint("panic: ", r) })
	if got != "panic: boom" {
		t.Fatalf("Guard = %q", got)
	}
	if got := Guard(func() int { return 7 }, func(any) int { return 0 }); got != 7 {
		t.Fatalf("Guard = %d", got)
	}
}
