package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
)

func init() { register(newHistory) }

// historyJSON is one message as history --json prints it: the body as
// JSON under data, or as text under text when it is not JSON.
type historyJSON struct {
	Seq     uint64              `json:"seq"`
	Time    string              `json:"time"`
	Subject string              `json:"subject"`
	Kind    string              `json:"kind"`
	Header  map[string][]string `json:"header,omitempty"`
	Data    json.RawMessage     `json:"data,omitempty"`
	Text    *string             `json:"text,omitempty"`
}

func newHistory(s streams) *cobra.Command {
	var conn connConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history RUN",
		Short: "Print a run's input messages in stream order",
		Long: "history reads every message of run RUN from the input stream (its start, events, task\n" +
			"results, timer fires and cancel requests), oldest first, and prints one line each: stream\n" +
			"time, stream sequence, kind and a summary. Messages the dispatchers terminate as malformed\n" +
			"say why. With --json it prints one JSON object per line with the raw body.",
		Args: namedArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := subjects.CheckRunID(id); err != nil {
				return fmt.Errorf("argument RUN: %w", err)
			}
			ctx := cmd.Context()
			f, stop, err := dialFleet(ctx, s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			msgs, err := replay.ReadHistory(ctx, f.JS, f.Names, id)
			if err != nil {
				return err
			}
			if len(msgs) == 0 {
				fmt.Fprintf(s.err, "no history for run %s: stream %s holds nothing on %s (never started, or trimmed by its retention)\n",
					id, f.Names.InputStream(), f.Names.RunInputs(id))
				return exitError{1}
			}
			enc := json.NewEncoder(s.out)
			enc.SetEscapeHTML(false)
			for _, m := range msgs {
				if !asJSON {
					fmt.Fprintln(s.out, replay.Line(f.Names, m))
					continue
				}
				kind, _ := replay.Summarize(f.Names, m)
				o := historyJSON{Seq: m.Seq, Time: m.Time.UTC().Format(time.RFC3339Nano), Subject: m.Subject, Kind: kind, Header: m.Header}
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
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per message, with the raw body")
	return cmd
}
