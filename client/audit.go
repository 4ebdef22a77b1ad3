package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// The audit log (docs/CONSOLE.md#audit): the console and the commands
// that change state append one entry per action; `jetflow audit` and the
// console's Audit page read it. Reads are direct gets by sequence only,
// so reading needs no consumer right.

// AuditWriteTimeout bounds one audit write: an action waits this long at
// most for its entry, then says the entry was not written.
const AuditWriteTimeout = 3 * time.Second

// WriteAudit appends e to the audit stream; an empty Time is now. It
// fails (saying so) when the stream is missing: run a provisioning serve
// or dispatcher of this version.
func (c *Client) WriteAudit(ctx context.Context, e wire.AuditEntry) error {
	if e.Time == "" {
		e.Time = time.Now().UTC().Format(time.RFC3339Nano)
	}
	if err := subjects.CheckEventType(e.Action); err != nil {
		return fmt.Errorf("client: audit action: %w", err)
	}
	if e.Source != subjects.AuditConsole && e.Source != subjects.AuditCLI {
		return fmt.Errorf("client: audit source %q is neither %q nor %q", e.Source, subjects.AuditConsole, subjects.AuditCLI)
	}
	ctx, cancel := context.WithTimeout(ctx, AuditWriteTimeout)
	defer cancel()
	err := c.publish(ctx, c.names.Audit(e.Source, e.Action), msgID("audit", e.Source, ""), e)
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (is the audit stream %s provisioned? a serve or dispatcher --provision of this version creates it)", err, c.names.AuditStream())
	}
	return err
}

// AuditFilter selects audit entries: every set field must hold.
type AuditFilter struct {
	// Run is the entry's run id.
	Run string
	// Who is the entry's identity, compared without regard to case.
	Who string
	// Since excludes entries written before it (zero: none).
	Since time.Time
}

func (f AuditFilter) match(e *wire.AuditEntry) bool {
	if f.Run != "" && e.Run != f.Run {
		return false
	}
	if f.Who != "" && !strings.EqualFold(e.Who, f.Who) {
		return false
	}
	return true
}

// AuditRecord is an entry with its stream sequence.
type AuditRecord struct {
	Seq uint64 `json:"seq"`
	wire.AuditEntry
}

// AuditPage is one page of entries, newest first.
type AuditPage struct {
	Entries []AuditRecord `json:"entries"`
	// Next is the Before of the next (older) page; 0 when there is none.
	Next uint64 `json:"next,omitempty"`
}

// auditScan bounds the entries one page looks at, matching or not, so
// that a filter matching nothing in a long log answers promptly.
const auditScan = 5000

// AuditPage reads up to limit entries matching f, newest first, from
// those older than sequence before (0: from the newest).
func (c *Client) AuditPage(ctx context.Context, before uint64, limit int, f AuditFilter) (*AuditPage, error) {
	s, err := c.auditStream(ctx)
	if err != nil {
		return nil, err
	}
	st := s.CachedInfo().State
	page := &AuditPage{Entries: []AuditRecord{}}
	seq := st.LastSeq
	if before > 0 && before-1 < seq {
		seq = before - 1
	}
	for scanned := 0; seq >= st.FirstSeq && seq > 0 && len(page.Entries) < limit; seq-- {
		if scanned++; scanned > auditScan {
			break
		}
		r, err := c.auditAt(ctx, s, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil && t.Before(f.Since) {
			seq = 0 // older still: the log is in time order
			break
		}
		if f.match(&r.AuditEntry) {
			page.Entries = append(page.Entries, *r)
		}
	}
	if seq >= st.FirstSeq && seq > 0 {
		page.Next = seq + 1
	}
	return page, nil
}

// FollowAudit calls fn with every entry matching f, oldest first, from
// f.Since; with follow it then waits for new entries, looking every
// poll on clk, until ctx ends (a nil error).
func (c *Client) FollowAudit(ctx context.Context, f AuditFilter, follow bool, clk clock.Clock, poll time.Duration, fn func(AuditRecord) error) error {
	s, err := c.auditStream(ctx)
	if err != nil {
		return err
	}
	// Back from the newest to Since, then forward.
	var back []AuditRecord
	before := uint64(0)
	for {
		p, err := c.AuditPage(ctx, before, 500, f)
		if err != nil {
			return err
		}
		back = append(back, p.Entries...)
		if p.Next == 0 {
			break
		}
		before = p.Next
	}
	next := s.CachedInfo().State.LastSeq + 1
	if len(back) > 0 && back[0].Seq >= next {
		next = back[0].Seq + 1
	}
	for i := len(back) - 1; i >= 0; i-- {
		if err := fn(back[i]); err != nil {
			return err
		}
	}
	if !follow {
		return nil
	}
	t := clk.NewTimer(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		info, err := s.Info(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("client: audit stream %s: %w", c.names.AuditStream(), err)
		}
		for ; next <= info.State.LastSeq; next++ {
			r, err := c.auditAt(ctx, s, next)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if f.match(&r.AuditEntry) {
				if err := fn(*r); err != nil {
					return err
				}
			}
		}
		t.Reset(poll)
	}
}

func (c *Client) auditStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := c.js.Stream(ctx, c.names.AuditStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("client: the audit stream %s does not exist: a serve or dispatcher --provision of this version creates it", c.names.AuditStream())
	}
	if err != nil {
		return nil, fmt.Errorf("client: audit stream %s: %w", c.names.AuditStream(), err)
	}
	return s, nil
}

func (c *Client) auditAt(ctx context.Context, s jetstream.Stream, seq uint64) (*AuditRecord, error) {
	m, err := s.GetMsg(ctx, seq)
	if err != nil {
		return nil, err
	}
	r := &AuditRecord{Seq: m.Sequence}
	if err := json.Unmarshal(m.Data, &r.AuditEntry); err != nil {
		// Anyone allowed to write the log could write this: show it, marked.
		r.Who, r.Action, r.Result, r.Detail = "?", "?", "?", fmt.Sprintf("not an audit entry (%d bytes on %s): %v", len(m.Data), m.Subject, err)
		r.Time = m.Time.UTC().Format(time.RFC3339Nano)
	}
	return r, nil
}
