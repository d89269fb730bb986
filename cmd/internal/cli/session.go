package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

func newSessionCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Conversation trees (pi session v3 JSONL)"}
	var leaf string
	contextCmd := &cobra.Command{
		Use:   "context FILE|ID|PREFIX",
		Short: "Print the context rebuilt at the leaf (or --leaf ID) as pi session v3's JSON (--json: trove's names)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			src, ref, opts, done, err := a.sessionSource(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			// Blobs come through opts: the store opens none of its own.
			s, err := session.OpenStore(ctx, src, session.WithInlineBlobs(), session.WithSessionOptions(opts...))
			if err != nil {
				return err
			}
			c, err := s.ContextFor(ctx, ref, leaf)
			if id, ok := a.agentRef(ctx, ref, err); ok {
				c, err = s.ContextFor(ctx, id, leaf)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				// trove's naming scheme around the messages, which are
				// the stored format, passed through as is.
				models, err := c.Models.MarshalJSON()
				if err != nil {
					return err
				}
				out := map[string]any{"leaf_id": nil, "messages": c.Messages, "thinking_level": c.ThinkingLevel,
					"models": json.RawMessage(models), "injected_ttsr_rules": c.InjectedTtsrRules, "mode": c.Mode}
				if c.LeafID != "" {
					out["leaf_id"] = c.LeafID
				}
				if c.ModeData != nil {
					out["mode_data"] = c.ModeData
				}
				return a.printRawJSON(out)
			}
			// Without --json: the object pi session v3's buildSessionContext
			// returns, names as the spec has them, to compare with it.
			enc := json.NewEncoder(a.stdout)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		},
	}
	contextCmd.Flags().StringVar(&leaf, "leaf", "", "rebuild at this entry id instead of the leaf")
	check := &cobra.Command{
		Use:   "check FILE|ID",
		Short: "Check a session file against trove's writing contract (strict pi session v3); exit 1 with the first violation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var data []byte
			var err error
			if filepath.Ext(args[0]) == ".jsonl" {
				data, err = os.ReadFile(args[0])
			} else {
				var s *session.Store
				if s, err = a.sessionStore(ctx); err == nil {
					var m session.Metadata
					if m, err = s.Metadata(ctx, args[0]); err == nil {
						data, err = a.st.ReadFile(ctx, m.Path)
					}
				}
			}
			if err != nil {
				return storeErr(err)
			}
			if err := tree.Check(data); err != nil {
				if a.jsonOut {
					_ = a.printJSON(map[string]any{"ok": false, "violation": err.Error()})
				}
				return &exitError{code: exitFailure, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"ok": true})
			}
			a.printf("%s: ok\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(contextCmd, check)
	return cmd
}

// sessionSource is where a command that reads one session finds it: a
// .jsonl file on disk, read without touching anything beside it (no
// directory created, no migration written back), or an id in the store.
// Blobs resolve from the store when there is one.
func (a *app) sessionSource(ctx context.Context, arg string) (backend.Storage, string, []tree.Option, func(), error) {
	opts := []tree.Option{tree.WithLogger(a.log)}
	if filepath.Ext(arg) != ".jsonl" {
		st, bs, err := a.blobs(ctx)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return st, arg, append(opts, tree.WithBlobStore(bs)), func() {}, nil
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		return nil, "", nil, nil, err
	}
	if a.checkStoreExists() == nil {
		if _, bs, err := a.blobs(ctx); err == nil {
			opts = append(opts, tree.WithBlobStore(bs))
		}
	}
	// The file's bytes in a private memory store: the session package reads
	// stores, and nothing it does there can reach the disk.
	m := mem.New()
	name := filepath.Base(arg)
	if backend.ValidPath(name) != nil {
		name = "session.jsonl"
	}
	if err := m.WriteFile(ctx, name, data); err != nil {
		m.Close()
		return nil, "", nil, nil, err
	}
	return m, name, opts, func() { m.Close() }, nil
}
