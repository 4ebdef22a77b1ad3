package step

import (
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
)

// Settings are the settings that shape records. Every dispatcher of a
// deployment and every replay of its runs must agree on them.
type Settings struct {
	// Names builds every subject. Default: subjects.Must("").
	Names subjects.Names
	// Tokens signs the token of every task invocation and checks the
	// token every result echoes; without it every result is refused.
	Tokens *token.Signer
	// AppliedHistory is how many recently applied input sequences a run
	// record keeps to recognise redeliveries. Default: 128.
	AppliedHistory int
	// RejectedHistory is how many recent rejections, and how many recent
	// ignored events, a run record keeps. Default: 32.
	RejectedHistory int
	// MaxInputBytes is the largest input body accepted; a larger one is
	// malformed, with its size in the reason. Default: 1 MiB (nats-server's
	// default max_payload).
	MaxInputBytes int
}

// Defaults of Settings.
const (
	DefaultAppliedHistory  = 128
	DefaultRejectedHistory = 32
	DefaultMaxInputBytes   = 1 << 20
)

// WithDefaults returns a copy of s with every unset field at its default.
func (s Settings) WithDefaults() Settings {
	if s.Names == (subjects.Names{}) {
		s.Names = subjects.Must("")
	}
	if s.AppliedHistory == 0 {
		s.AppliedHistory = DefaultAppliedHistory
	}
	if s.RejectedHistory == 0 {
		s.RejectedHistory = DefaultRejectedHistory
	}
	if s.MaxInputBytes == 0 {
		s.MaxInputBytes = DefaultMaxInputBytes
	}
	return s
}

// Validate says which field is out of range.
func (s Settings) Validate() error {
	var errs []error
	if s.AppliedHistory < 1 {
		errs = append(errs, fmt.Errorf("AppliedHistory %d is below 1", s.AppliedHistory))
	}
	if s.RejectedHistory < 1 {
		errs = append(errs, fmt.Errorf("RejectedHistory %d is below 1", s.RejectedHistory))
	}
	if s.MaxInputBytes < 1 {
		errs = append(errs, fmt.Errorf("MaxInputBytes %d is below 1", s.MaxInputBytes))
	}
	return errors.Join(errs...)
}
