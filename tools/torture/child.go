package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/tools/internal/treehash"
)

// Child runs operations on the store until it is killed, printing one Ack
// line on out after each operation is durable. It returns only on error.
func Child(ctx context.Context, cfg Config, seed uint64, out io.Writer) error {
	rng := rand.New(rand.NewPCG(seed, 0xc41d))
	s, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ack := func(a Ack) error {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		_, err = out.Write(append(b, '\n'))
		return err
	}
	h, err := s.Sessions().Continue(ctx, cfg.WS)
	if errors.Is(err, fs.ErrNotExist) {
		h, err = s.Sessions().Create(ctx, session.CreateOptions{Cwd: cfg.WS, Model: "torture"})
	}
	if err != nil {
		return fmt.Errorf("child: session: %w", err)
	}
	defer h.Close(ctx)
	w, err := s.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
	if err != nil {
		return fmt.Errorf("child: run: %w", err)
	}
	defer w.Close()
	m, err := s.Checkpoints(cfg.WS)
	if err != nil {
		return fmt.Errorf("child: checkpoints: %w", err)
	}
	defer m.Close()
	var cps []string
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for i := 0; ; i++ {
		marker := fmt.Sprintf("[k%d-%d]", seed, i)
		switch op := rng.IntN(100); {
		case op < 30:
			word := searchWord(seed, i)
			msg := fmt.Sprintf(`{"role":"user","content":"%s %s %x","timestamp":%d}`, marker, word, random(rng.IntN(600)), i)
			if err := h.AppendMessage(ctx, json.RawMessage(msg)); err != nil {
				return err
			}
			if err := h.Flush(ctx); err != nil {
				return err
			}
			if err := ack(Ack{Op: "msg", Session: h.ID(), Path: h.Path(), Marker: marker, Word: word}); err != nil {
				return err
			}
			if rng.IntN(3) == 0 {
				if err := searchOwn(ctx, s, rng, word, ack); err != nil {
					return err
				}
			}
		case op < 45:
			if err := h.AppendTranscript(ctx, json.RawMessage(fmt.Sprintf(`{"type":"sdk","marker":%q}`, marker))); err != nil {
				return err
			}
			if err := h.Flush(ctx); err != nil {
				return err
			}
			if err := ack(Ack{Op: "transcript", Session: h.ID(), Marker: marker}); err != nil {
				return err
			}
		case op < 60:
			ref, err := s.Blobs().Put(ctx, random(1+rng.IntN(64<<10)))
			if err != nil {
				return err
			}
			if err := ack(Ack{Op: "blob", Ref: ref.String()}); err != nil {
				return err
			}
		case op < 65:
			ref, err := s.Blobs().PutReader(ctx, bytes.NewReader(random(1<<20+rng.IntN(2<<20))))
			if err != nil {
				return err
			}
			if err := ack(Ack{Op: "blob", Ref: ref.String()}); err != nil {
				return err
			}
		case op < 73:
			b := s.Blobs().NewBatch()
			var refs []string
			for range 10 + rng.IntN(30) {
				ref, err := b.Put(ctx, random(100+rng.IntN(4000)))
				if err != nil {
					return err
				}
				refs = append(refs, ref.String())
			}
			if err := b.Flush(ctx); err != nil {
				return err
			}
			for _, r := range refs {
				if err := ack(Ack{Op: "blob", Ref: r}); err != nil {
					return err
				}
			}
		case op < 85:
			for range 1 + rng.IntN(3) {
				name := filepath.Join(cfg.WS, fmt.Sprintf("f%02d.txt", rng.IntN(20)))
				if rng.IntN(5) == 0 {
					os.Remove(name)
					continue
				}
				if err := os.WriteFile(name, []byte(fmt.Sprintf("%s\n%x\n", marker, random(rng.IntN(3000)))), 0o644); err != nil {
					return err
				}
			}
			name := fmt.Sprintf("cp-k%d-%d", seed, i)
			if _, err := m.CreateTree(ctx, name); err != nil {
				return err
			}
			files, err := treehash.Hash(cfg.WS, treehash.Options{FollowSymlinks: true})
			if err != nil {
				return err
			}
			cps = append(cps, name)
			if err := ack(Ack{Op: "cp", Name: name, Files: files}); err != nil {
				return err
			}
		case op < 90:
			if len(cps) > 0 {
				if _, err := m.Rewind(ctx, cps[rng.IntN(len(cps))], false); err != nil {
					return err
				}
			}
		default:
			if _, err := w.Event(ctx, map[string]string{"marker": marker}); err != nil {
				return err
			}
			if err := w.Sync(ctx); err != nil {
				return err
			}
			if err := ack(Ack{Op: "run", Run: w.RunID(), Marker: marker}); err != nil {
				return err
			}
		}
	}
}
