package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/token"
)

// secretConfig is the deployment's token secret for the verbs that sign
// or check result tokens: serve and dispatcher sign and check them, replay
// and console check them while rebuilding records. Unset, they load the
// secret the first dispatcher generated in the workflow bucket.
type secretConfig struct {
	Secret   string `env:"JETFLOW_TOKEN_SECRET" flag:"token-secret"`
	File     string `env:"JETFLOW_TOKEN_SECRET_FILE" flag:"token-secret-file"`
	Previous string `env:"JETFLOW_TOKEN_SECRET_PREVIOUS" flag:"token-secret-previous"`

	flags *pflag.FlagSet
}

// secretHint follows a refusal of the secret: where to set it.
const secretHint = " (set it with --token-secret, --token-secret-file or JETFLOW_TOKEN_SECRET, retired ones with --token-secret-previous; docs/SECURITY.md)"

func addSecretFlags(cmd *cobra.Command, c *secretConfig) {
	fs := cmd.Flags()
	c.flags = fs
	fs.StringVar(&c.Secret, "token-secret", "", "the deployment's secret for result tokens, hex or base64, at least 32 bytes (openssl rand -hex 32); every dispatcher needs the same; default: the one generated in the workflow bucket. Prefer the env var or the file, flags show in ps (env JETFLOW_TOKEN_SECRET)")
	fs.StringVar(&c.File, "token-secret-file", "", "file holding --token-secret (env JETFLOW_TOKEN_SECRET_FILE)")
	fs.StringVar(&c.Previous, "token-secret-previous", "", "retired secrets still accepted, comma-separated, while invocations they signed are in flight; naming the bucket's generated secret moves a deployment to --token-secret (env JETFLOW_TOKEN_SECRET_PREVIOUS)")
}

// signer returns the configured signer, or nil when no secret is
// configured. Errors name the flag and variable, never the secret.
func (c *secretConfig) signer() (*token.Signer, error) {
	if err := applyEnv(c.flags, c); err != nil {
		return nil, err
	}
	text := c.Secret
	switch {
	case c.Secret != "" && c.File != "":
		return nil, errors.New("--token-secret and --token-secret-file (JETFLOW_TOKEN_SECRET, JETFLOW_TOKEN_SECRET_FILE) are alternatives: give one")
	case c.File != "":
		b, err := os.ReadFile(c.File)
		if err != nil {
			return nil, fmt.Errorf("--token-secret-file (JETFLOW_TOKEN_SECRET_FILE): %w", err)
		}
		text = string(b)
	case text == "" && c.Previous != "":
		return nil, errors.New("--token-secret-previous (JETFLOW_TOKEN_SECRET_PREVIOUS) needs --token-secret: the secret to sign with")
	case text == "":
		return nil, nil
	}
	secret, err := token.ParseSecret(text)
	if err != nil {
		source := "--token-secret (JETFLOW_TOKEN_SECRET)"
		if c.File != "" {
			source = fmt.Sprintf("--token-secret-file (JETFLOW_TOKEN_SECRET_FILE) %s", c.File)
		}
		return nil, fmt.Errorf("%s: %w (make one with: openssl rand -hex 32)", source, err)
	}
	var previous [][]byte
	if c.Previous != "" {
		for i, p := range strings.Split(c.Previous, ",") {
			b, err := token.ParseSecret(p)
			if err != nil {
				return nil, fmt.Errorf("--token-secret-previous (JETFLOW_TOKEN_SECRET_PREVIOUS) secret %d: %w", i+1, err)
			}
			previous = append(previous, b)
		}
	}
	return token.New(secret, previous...)
}

// secretAttrs say in a log line where the token secret comes from, by its
// fingerprint, never the secret.
func secretAttrs(s *token.Signer) slog.Attr {
	if s == nil {
		return slog.String("token_secret", "the workflow bucket's")
	}
	return slog.String("token_secret", "configured, fingerprint "+s.Fingerprint())
}

// hintStart points a refusal to start at the flags that resolve it: the
// token secret, or the migration of an old input stream.
func hintStart(err error) error {
	if errors.Is(err, token.ErrDisagree) {
		return fmt.Errorf("%w%s", err, secretHint)
	}
	if errors.Is(err, provision.ErrUnsafeInputStream) {
		return fmt.Errorf("%w\n(with the command: stop every dispatcher, then start one with --provision --migrate-inputs, or serve with --migrate-inputs)", err)
	}
	if errors.Is(err, provision.ErrPartitions) {
		return fmt.Errorf("%w\n(with the command: leave --partitions unset to keep the stream's; to partition an unpartitioned stream, stop every dispatcher, then start one with --provision --migrate-partitions, or serve with --migrate-partitions)", err)
	}
	return err
}
