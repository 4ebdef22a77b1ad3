package provision

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// DefaultAuditMaxAge is ProvisionOptions.AuditMaxAge's default: a little
// over a year, so that a yearly review still finds last year's actions.
const DefaultAuditMaxAge = 400 * 24 * time.Hour

// AuditStreamConfig is the audit log (package client writes and reads
// it): one entry per action taken through the console or a command that
// changes state, kept AuditMaxAge. Entries are only appended: the stream
// denies deleting and purging them (a setting the server never lets
// anyone undo), so an entry leaves only by age. Direct gets let the
// console page back through it from the newest.
func AuditStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:        names.AuditStream(),
		Description: "jetflow audit log: who did what through the console and the command line",
		Subjects:    []string{names.AuditAll()},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      opts.AuditMaxAge,
		MaxMsgSize:  maxMsgSize(opts.MaxMsgSize),
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
		Duplicates:  time.Minute,
		DenyDelete:  true,
		DenyPurge:   true,
		AllowDirect: true,
	}
}
