package kvstore

import (
	"context"
	"encoding/json"
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
func SubjectCounts(ctx context.Context, js jetstream.JetStream, stream, filter string, most int) (map[string]uint64, uint64, error) {
	o := js.Options()
	if _, ok := ctx.Deadline(); !ok && o.DefaultTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DefaultTimeout)
		defer cancel()
	}
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
