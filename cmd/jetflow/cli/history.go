package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// historyJSON is one message as history --json prints it: the body as
// JSON under data, or as text under text when it is not JSON, and the
// verdict on it with its reason (both absent when the history could not
// be replayed).
type historyJSON struct {
	Seq     uint64              `json:"seq"`
	Time    string              `json:"time"`
	Subject string              `json:"subject"`
	Kind    string              `json:"kind"`
	Header  map[string][]string `json:"header,omitempty"`
	Data    json.RawMessage     `json:"data,omitempty"`
	Text    *string             `json:"text,omitempty"`
	Verdict string              `json:"verdict,omitempty"`
	Reason  string              `json:"reason,omitempty"`
	// Revision is the revision a start pinned the run to; State and Task
	// name a task result's work state and task@version.
	Revision string `json:"revision,omitempty"`
	State    string `json:"state,omitempty"`
	Task     string `json:"task,omitempty"`
}

func newHistory(s streams) *cobra.Command {
	var conn connConfig
	var tokens secretConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history RUN",
		Short: "Print a run's input messages in stream order, with what became of each",
		Long: "history reads every message of run RUN from the input stream (its start, events, task\n" +
			"results, timer fires and cancel requests), oldest first, and prints one line each: stream\n" +
			"time (RFC 3339, UTC, milliseconds), stream sequence, kind, a summary and, after \"|\", the\n" +
			"verdict on it. A start names the revision the run was pinned to (\"revision=r2 (the latest at\n" +
			"its start)\" when it named none); a task result names its work state and task\n" +
			"(\"state=go task=boom@1\"; in a DAG of several tasks also the node: \"state=check node=stock\n" +
			"task=check-stock@1\"). A child run's start names its parent (\"parent=RUN node=N attempt=A\"),\n" +
			"and a result a child run sent its parent names the child (\"child=RUN\"; docs/CHILDREN.md).\n" +
			"The verdicts:\n\n" +
			"  applied     the run took it\n" +
			"  rejected    the run refused it, with the reason (a forged or stale token, after its end…)\n" +
			"  ignored     the run consumed it without effect (an event no branch of its wait took)\n" +
			"  duplicate   a redelivery the record already reflected\n" +
			"  malformed   no dispatcher can parse it: they terminate it, with the reason\n" +
			"  failed      it failed permanently: the dispatchers terminate it\n" +
			"  no-run      not a start, and the run had no record at that point\n" +
			"  unapplied   the order the record lists never applied it (terminated, dropped, in flight)\n" +
			"  superseded  the run took it, then a reset took the run back to an earlier input: it no\n" +
			"              longer counts (the reason names the reset and what the input was before)\n\n" +
			"The verdicts come from replaying the history through the dispatchers' own code, as\n" +
			"`jetflow replay` does (with the dispatchers' default task retry policies). When it cannot be\n" +
			"replayed (trimmed history, a revision no longer deployed) history prints the messages\n" +
			"without verdicts and says why on stderr. With --json it prints one JSON object per line\n" +
			"with the raw body and the members verdict and reason, revision (of a start), state and task\n" +
			"(of a result).\n\n" +
			"Of a run removed by retention it says so (\"run RUN removed by retention at T ...\") on\n" +
			"stderr and exits 1; where the input stream keeps history (it denies purges) it prints the\n" +
			"messages without verdicts. A run archived before its removal is read from the archive, with\n" +
			"its verdicts, under the line \"archived (removed by retention at T)\" on stderr.",
		Args: namedArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var signer *token.Signer
			check := func() (err error) {
				signer, err = tokens.signer()
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, check, func(ctx context.Context, f *fleet.Fleet) error {
				ar, archived := readArchived(ctx, f, id)
				msgs, notes, err := annotatedHistory(ctx, f, signer, id, ar)
				if err != nil {
					return err
				}
				if archived {
					fmt.Fprintln(s.err, archivedMark(ar.Removed))
				} else if re, ok := readRemoved(ctx, f, id); ok {
					fmt.Fprintf(s.err, "%s\n", removedNote(re))
					if len(msgs) == 0 {
						return exitError{1}
					}
					notes = append(notes[:0], "the run is removed: no verdicts")
				}
				if len(msgs) == 0 {
					fmt.Fprintf(s.err, "no history for run %s: stream %s holds nothing on %s (never started, or trimmed by its retention)\n",
						id, f.Names.InputStream(), f.Names.RunInputs(id))
					return exitError{1}
				}
				for _, n := range notes {
					fmt.Fprintf(s.err, "note: %s\n", n)
				}
				enc := json.NewEncoder(s.out)
				enc.SetEscapeHTML(false)
				hn := readHistoryNames(ctx, f, id)
				for _, m := range msgs {
					if !asJSON {
						fmt.Fprintln(s.out, hn.line(f.Names, m))
						continue
					}
					kind, summary := replay.Summarize(f.Names, m.Message)
					o := historyJSON{
						Seq: m.Seq, Time: stamp(m.Time), Subject: m.Subject, Kind: kind, Header: m.Header,
						Verdict: string(m.Verdict), Reason: m.Reason,
					}
					o.State, o.Task, _ = hn.summary(f.Names, m.Message, summary)
					if kind == subjects.KindStart {
						o.Revision = hn.revision
					}
					if json.Valid(m.Data) {
						o.Data = m.Data
					} else if len(m.Data) > 0 {
						text := string(m.Data)
						o.Text = &text
					}
					if err := enc.Encode(o); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	addSecretFlags(cmd, &tokens) // results are screened by their tokens again
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per message, with the raw body, verdict and reason")
	return cmd
}

// annotatedHistory is the run's history with the verdict on each message,
// and notes on what the verdicts assume. When the history cannot be
// replayed it is the plain history, and a note says why the verdicts are
// missing.
func annotatedHistory(ctx context.Context, f *fleet.Fleet, signer *token.Signer, id string, archived *wire.Archived) ([]replay.Annotated, []string, error) {
	src := replay.Source{JS: f.JS, Names: f.Names, Registry: f.Registry, Runs: f.Runs, Settings: step.Settings{Tokens: signer}, Archived: archived}
	msgs, info, err := replay.Annotate(ctx, src, id)
	if err == nil {
		return msgs, info.Notes, nil
	}
	if errors.Is(err, replay.ErrNoHistory) {
		return nil, nil, nil
	}
	if msgs == nil && archived == nil {
		// Annotate read no history (the run bucket failed it, say): read
		// it alone.
		plain, rerr := replay.ReadHistory(ctx, f.JS, f.Names, id)
		if rerr != nil {
			return nil, nil, rerr
		}
		for _, m := range plain {
			msgs = append(msgs, replay.Annotated{Message: m})
		}
	}
	return msgs, []string{"no verdicts: the history cannot be replayed: " + oneLineText(hintStart(err).Error())}, nil
}

// oneLineText is s with every run of white space, line breaks included,
// made one space.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
