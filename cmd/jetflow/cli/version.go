package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
)

// buildVersion is what this binary was built from, as its build
// information records it.
type buildVersion struct {
	Version    string `json:"version"`          // the module version; "(devel)" for a build from a checkout
	Commit     string `json:"commit,omitempty"` // the VCS revision, when the build recorded one
	CommitTime string `json:"commitTime,omitempty"`
	Modified   bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
	NATSServer string `json:"natsServer"`         // the embedded nats-server's version
	NATSClient string `json:"natsClient"`         // nats.go's version
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

// commit is the VCS revision of a build whose build information records
// none: the go command stamps it only when .git is a directory, so not in
// a git worktree (where .git is a file) nor in a tree copied without .git.
// Such a build sets it:
//
//	go build -ldflags "-X github.com/jetflow/jetflow/cmd/jetflow/cli.commit=$(git rev-parse HEAD)" ./cmd/jetflow
var commit string

func readBuildVersion() buildVersion {
	v := readBuildInfo()
	if v.Commit == "" {
		v.Commit = commit
	}
	return v
}

func readBuildInfo() buildVersion {
	v := buildVersion{
		Version: "(unknown)", NATSServer: server.VERSION, NATSClient: nats.Version,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line form `jetflow version` and `--version` print.
func (v buildVersion) String() string {
	from := "commit unknown (built without VCS information: see jetflow version --help)"
	if v.Commit != "" {
		from = "commit " + v.Commit
		if v.CommitTime != "" {
			from += " of " + v.CommitTime
		}
		if v.Modified {
			from += ", modified"
		}
	}
	return fmt.Sprintf("jetflow %s, %s; nats-server %s, nats.go %s, %s %s",
		v.Version, from, v.NATSServer, v.NATSClient, v.Go, v.Platform)
}

func newVersion(s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print what this binary was built from",
		Long: "version prints jetflow's module version, the commit it was built from (when the build\n" +
			"recorded one), the nats-server it embeds, the nats.go client it links, and the Go toolchain.\n" +
			"`jetflow --version` prints the same line.\n\n" +
			"The go command records the commit only when it builds in a git checkout whose .git is a\n" +
			"directory: not in a git worktree, nor in a copy of the tree without .git, nor with\n" +
			"-buildvcs=false. Such a build names its commit with\n" +
			"  go build -ldflags \"-X github.com/jetflow/jetflow/cmd/jetflow/cli.commit=$(git rev-parse HEAD)\" ./cmd/jetflow",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := readBuildVersion()
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			fmt.Fprintln(s.out, v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the fields as a JSON object")
	return cmd
}
