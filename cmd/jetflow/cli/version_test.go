package cli

import (
	"strings"
	"testing"
)

// TestVersionNamesALinkedCommit: a build whose build information records
// no commit (a git worktree, a tree without .git: test binaries too)
// names the commit its -ldflags -X set.
func TestVersionNamesALinkedCommit(t *testing.T) {
	if v := readBuildInfo(); v.Commit != "" {
		t.Skipf("this binary records commit %s itself", v.Commit)
	}
	if got := readBuildVersion().String(); !strings.Contains(got, "commit unknown (built without VCS information: see jetflow version --help)") {
		t.Errorf("without a commit: %q", got)
	}
	commit = "0123abcd"
	t.Cleanup(func() { commit = "" })
	if got := readBuildVersion(); got.Commit != "0123abcd" || !strings.Contains(got.String(), "commit 0123abcd;") {
		t.Errorf("with -X cli.commit: %+v, %q", got, got.String())
	}
}
