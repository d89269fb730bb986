package trove_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/internal/cputime"
	"github.com/trovekit/trove/session"
)

// The cost of encryption at rest (docs/security.md): each case runs on a
// plain and an encrypted store side by side, in memory (the CPU's cost
// alone) and on local disk (the default store, where fsync dominates a
// Flush). Each iteration does one operation on each store, in turns that
// alternate which goes first, so that a busy machine slows both alike; the
// medians of the two series and their ratio are reported
// (x-encrypted/plain, the goal: <= 1.2).
//
//	go test -run '^$' -bench BenchmarkCrypt -benchtime 40x .
func BenchmarkCrypt(b *testing.B) {
	for _, url := range []string{"mem", "fs"} {
		b.Run(url, func(b *testing.B) { benchCrypt(b, url) })
	}
}

// cryptCase prepares an operation on a store opened by open; the
// operation's untimed setup (a fresh store for a first checkpoint) goes
// through pause.
type cryptCase func(b *testing.B, open func() *trove.Store) func(pause func(func()))

func benchCrypt(b *testing.B, backendName string) {
	for _, c := range []struct {
		name string
		prep cryptCase
	}{
		{"blob-put-4MiB", benchBlobPut},
		{"blob-get-4MiB", benchBlobGet},
		{"flush-64-messages", benchFlush},
		{"tree-checkpoint", benchTreeCheckpoint},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ops [2]func(pause func(func()))
			for i, enc := range []bool{false, true} {
				var opts []trove.Option
				if enc {
					opts = append(opts, trove.WithKey([]byte("pw")), fastKDF)
				}
				ops[i] = c.prep(b, func() *trove.Store {
					url := "mem://"
					if backendName == "fs" {
						url = b.TempDir()
					}
					s, err := trove.Open(context.Background(), url, opts...)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { s.Close() })
					return s
				})
			}
			// Wall time and the process's CPU time (user and system) of
			// each operation: on a shared machine the wall time swings with
			// the load, the CPU time much less.
			var wall, cpu [2][]time.Duration
			round := 0
			for b.Loop() {
				for k := range 2 {
					side := (k + round) % 2
					var paused, pausedCPU time.Duration
					pause := func(f func()) {
						b.StopTimer()
						t0, c0 := time.Now(), cputime.Self()
						f()
						paused, pausedCPU = paused+time.Since(t0), pausedCPU+cputime.Self()-c0
						b.StartTimer()
					}
					t0, c0 := time.Now(), cputime.Self()
					ops[side](pause)
					wall[side] = append(wall[side], time.Since(t0)-paused)
					cpu[side] = append(cpu[side], cputime.Self()-c0-pausedCPU)
				}
				round++
			}
			plain, enc := median(wall[0]), median(wall[1])
			b.ReportMetric(float64(plain.Microseconds())/1000, "plain-ms")
			b.ReportMetric(float64(enc.Microseconds())/1000, "encrypted-ms")
			b.ReportMetric(float64(enc)/float64(plain), "x-encrypted/plain")
			if p := median(cpu[0]); p > 0 {
				b.ReportMetric(float64(median(cpu[1]))/float64(p), "x-cpu-encrypted/plain")
			}
		})
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func randomBlob(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	buf := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], r.Uint64())
	}
	return buf
}

func benchBlobPut(b *testing.B, open func() *trove.Store) func(func(func())) {
	ctx, s := context.Background(), open()
	data := randomBlob(4<<20, 1)
	i := uint64(0)
	return func(func(func())) {
		i++
		binary.LittleEndian.PutUint64(data, i) // a new blob each time
		if _, err := s.Blobs().Put(ctx, data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBlobGet(b *testing.B, open func() *trove.Store) func(func(func())) {
	ctx, s := context.Background(), open()
	data := randomBlob(4<<20, 2)
	ref, err := s.Blobs().Put(ctx, data)
	if err != nil {
		b.Fatal(err)
	}
	return func(func(func())) {
		if _, err := s.Blobs().Get(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFlush(b *testing.B, open func() *trove.Store) func(func(func())) {
	ctx, s := context.Background(), open()
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/bench", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close(ctx) })
	msgs := make([]json.RawMessage, 64)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs[i] = json.RawMessage(fmt.Sprintf(`{"role":%q,"content":"message %d: a line of text about the code under review, long enough to be typical of an agent turn","timestamp":%d}`, role, i, i+1))
	}
	return func(func(func())) {
		for _, m := range msgs {
			if err := h.AppendMessage(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
		if err := h.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTreeCheckpoint snapshots a tree of 500 source-like files into a
// fresh store each time: the first checkpoint, the costliest.
func benchTreeCheckpoint(b *testing.B, open func() *trove.Store) func(func(func())) {
	ctx := context.Background()
	ws := b.TempDir()
	for i := range 500 {
		d := filepath.Join(ws, fmt.Sprintf("pkg%02d", i%25))
		os.MkdirAll(d, 0o755)
		body := fmt.Sprintf("package pkg%d\n\n// file %d\n%s", i%25, i, randomText(4000, uint64(i)))
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.go", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return func(pause func(func())) {
		var s *trove.Store
		pause(func() { s = open() })
		m, err := s.Checkpoints(ws)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.CreateTree(ctx, "cp"); err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

func randomText(n int, seed uint64) string {
	words := []string{"func", "return", "err", "nil", "if", "for", "range", "ctx", "store", "blob", "session", "{", "}", "\n\t"}
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, words[r.IntN(len(words))]...)
		out = append(out, ' ')
	}
	return string(out)
}
