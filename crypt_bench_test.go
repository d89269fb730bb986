package trove_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/session"
)

// The cost of encryption at rest (docs/security.md): each case runs on a
// plain and an encrypted store, in memory (the CPU's cost alone) and on
// local disk (the default store, where fsync dominates a Flush).
//
//	go test -run '^$' -bench BenchmarkCrypt -benchtime 20x .
func BenchmarkCrypt(b *testing.B) {
	for _, url := range []string{"mem", "fs"} {
		b.Run(url, func(b *testing.B) { benchCrypt(b, url) })
	}
}

func benchCrypt(b *testing.B, backendName string) {
	for _, c := range []struct {
		name string
		run  func(b *testing.B, open func() *trove.Store)
	}{
		{"blob-put-4MiB", benchBlobPut},
		{"blob-get-4MiB", benchBlobGet},
		{"flush-64-messages", benchFlush},
		{"tree-checkpoint", benchTreeCheckpoint},
	} {
		for _, enc := range []bool{false, true} {
			name := c.name + "/plain"
			var opts []trove.Option
			if enc {
				name = c.name + "/encrypted"
				opts = append(opts, trove.WithKey([]byte("pw")), fastKDF)
			}
			b.Run(name, func(b *testing.B) {
				// The process's CPU time per op beside the wall time: the
				// machines this runs on are shared.
				cpu0 := cpuTime()
				defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
				c.run(b, func() *trove.Store {
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
			})
		}
	}
}

func randomBlob(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	buf := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], r.Uint64())
	}
	return buf
}

func benchBlobPut(b *testing.B, open func() *trove.Store) {
	ctx, s := context.Background(), open()
	data := randomBlob(4<<20, 1)
	b.SetBytes(int64(len(data)))
	i := uint64(0)
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i) // a new blob each time
		if _, err := s.Blobs().Put(ctx, data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBlobGet(b *testing.B, open func() *trove.Store) {
	ctx, s := context.Background(), open()
	data := randomBlob(4<<20, 2)
	ref, err := s.Blobs().Put(ctx, data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Blobs().Get(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFlush(b *testing.B, open func() *trove.Store) {
	ctx, s := context.Background(), open()
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/bench", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	msgs := make([]json.RawMessage, 64)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs[i] = json.RawMessage(fmt.Sprintf(`{"role":%q,"content":"message %d: a line of text about the code under review, long enough to be typical of an agent turn","timestamp":%d}`, role, i, i+1))
	}
	for b.Loop() {
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
func benchTreeCheckpoint(b *testing.B, open func() *trove.Store) {
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
	for b.Loop() {
		b.StopTimer()
		s := open()
		b.StartTimer()
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

// cpuTime is the user and system CPU time of the process so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
