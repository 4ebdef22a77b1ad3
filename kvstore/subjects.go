package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// SubjectCounts returns the literal subjects that filter matches in
// stream, each with how many messages it holds, and the stream's last
// sequence when it answered: STREAM.INFO with a subject filter, which
// the server answers from its per-subject index (at a cost that grows
// with the matching subjects only), page by page. More than most
// subjects (most > 0) is ErrTooManyResults, known from the first page;
// a missing stream wraps jetstream.ErrStreamNotFound.
//
// A replicated stream with no leader has every replica answer STREAM.INFO
// with its own state, which may lag the last leader's or lack messages
// it holds (RELIABILITY.md, finding 26): such an answer, whose cluster
// names no leader, is asked again until a leader answers, ctx ends or
// DefaultRetryFor passes (ErrNoLeader).
func SubjectCounts(ctx context.Context, js jetstream.JetStream, stream, filter string, most int) (map[string]uint64, uint64, error) {
	o := js.Options()
	if _, ok := ctx.Deadline(); !ok && o.DefaultTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DefaultTimeout)
		defer cancel()
	}
	type answer struct {
		counts map[string]uint64
		last   uint64
	}
	a, err := untilLeader(ctx, func() (answer, error) {
		counts, seq, err := subjectCounts(ctx, js, stream, filter, most)
		return answer{counts, seq}, err
	})
	return a.counts, a.last, err
}

// untilLeader runs op again (Retry) while it fails with ErrNoLeader, and
// stops at any other error.
func untilLeader[T any](ctx context.Context, op func() (T, error)) (T, error) {
	return Retry(ctx, 0, func() (T, error) {
		v, err := op()
		if err != nil && !errors.Is(err, ErrNoLeader) {
			return v, Permanent(err)
		}
		return v, err
	})
}

// ErrNoLeader: a replicated stream answered with no leader.
var ErrNoLeader = errors.New("the stream has no leader")

// subjectCounts is one paged read of SubjectCounts.
func subjectCounts(ctx context.Context, js jetstream.JetStream, stream, filter string, most int) (map[string]uint64, uint64, error) {
	o := js.Options()
	api := subjects.APIPrefix(o.Domain) + "STREAM.INFO." + stream
	out := map[string]uint64{}
	var last uint64
	for offset := 0; ; {
		req, err := json.Marshal(map[string]any{"subjects_filter": filter, "offset": offset})
		if err != nil {
			return nil, 0, err
		}
		reply, err := js.Conn().RequestWithContext(ctx, api, req)
		if err != nil {
			return nil, 0, fmt.Errorf("the subjects %q of stream %q: %w", filter, stream, err)
		}
		var resp struct {
			Total int `json:"total"`
			State struct {
				LastSeq  uint64            `json:"last_seq"`
				Subjects map[string]uint64 `json:"subjects"`
			} `json:"state"`
			Cluster *struct {
				Leader string `json:"leader"`
			} `json:"cluster"`
			Error *struct {
				ErrCode     int    `json:"err_code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(reply.Data, &resp); err != nil {
			return nil, 0, fmt.Errorf("the subjects %q of stream %q: bad reply: %w", filter, stream, err)
		}
		if resp.Error != nil {
			if resp.Error.ErrCode == int(jetstream.JSErrCodeStreamNotFound) {
				return nil, 0, fmt.Errorf("the subjects %q of stream %q: %w", filter, stream, jetstream.ErrStreamNotFound)
			}
			return nil, 0, fmt.Errorf("the subjects %q of stream %q: %s (%d)", filter, stream, resp.Error.Description, resp.Error.ErrCode)
		}
		if resp.Cluster != nil && resp.Cluster.Leader == "" {
			return nil, 0, fmt.Errorf("the subjects %q of stream %q: %w", filter, stream, ErrNoLeader)
		}
		if offset == 0 {
			last = resp.State.LastSeq
			if n := max(resp.Total, len(resp.State.Subjects)); most > 0 && n > most {
				return nil, 0, fmt.Errorf("%w: %d subjects match %q", ErrTooManyResults, n, filter)
			}
		}
		for s, n := range resp.State.Subjects {
			out[s] = n
		}
		offset += len(resp.State.Subjects)
		if len(resp.State.Subjects) == 0 || offset >= resp.Total {
			return out, last, nil
		}
	}
}

// LeaderInfo is s.Info answered by the stream's leader: an answer of a
// replicated stream with no leader (each replica's own state, see
// SubjectCounts) is asked again as SubjectCounts' is. For
// decisions taken on a stream's state: its first and last sequence, or
// whether it is empty.
func LeaderInfo(ctx context.Context, s jetstream.Stream) (*jetstream.StreamInfo, error) {
	return untilLeader(ctx, func() (*jetstream.StreamInfo, error) {
		info, err := s.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader == "" {
			return nil, fmt.Errorf("stream %q: %w", info.Config.Name, ErrNoLeader)
		}
		return info, err
	})
}

// BindLeader is js.Stream whose CachedInfo is a leader's answer (see
// LeaderInfo): one request unless the stream has no leader.
func BindLeader(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	if c := s.CachedInfo().Cluster; c != nil && c.Leader == "" {
		if _, err := LeaderInfo(ctx, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
