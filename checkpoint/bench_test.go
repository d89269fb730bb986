package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/internal/cputime"
)

// benchTree writes n files of about total bytes in nested directories,
// 80% source-like text and 20% random bytes, mtimes an hour back (as
// cpbench does), and returns the text files' paths.
func benchTree(b *testing.B, root string, n int, total int64) []string {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	mean := total / int64(n)
	old := time.Now().Add(-time.Hour)
	words := strings.Fields("func var return if else for range package import struct type interface map chan go defer")
	var text []string
	for i := range n {
		dir := fmt.Sprintf("pkg%02d/sub%02d/leaf%d", i%40, (i/40)%8, (i/320)%4)
		size := mean/4 + rng.Int64N(mean*3/2+1)
		var data []byte
		name := fmt.Sprintf("file%04d.go", i)
		if i%5 == 4 {
			name = fmt.Sprintf("asset%04d.bin", i)
			data = make([]byte, size)
			for j := range data {
				data[j] = byte(rng.UintN(256))
			}
		} else {
			var buf bytes.Buffer
			for int64(buf.Len()) < size {
				for w := range 3 + rng.IntN(8) {
					if w > 0 {
						buf.WriteByte(' ')
					}
					buf.WriteString(words[rng.IntN(len(words))])
				}
				fmt.Fprintf(&buf, " // %d\n", rng.IntN(100000))
			}
			data = buf.Bytes()
			text = append(text, filepath.ToSlash(filepath.Join(dir, name)))
		}
		p := filepath.Join(root, dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	return text
}

// edit changes files the way cpbench does: a line replaced, two inserted,
// one appended.
func edit(b *testing.B, root string, paths []string, round int) {
	b.Helper()
	for _, p := range paths {
		full := filepath.Join(root, p)
		data, err := os.ReadFile(full)
		if err != nil {
			b.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		mid := len(lines) / 2
		lines[mid] = fmt.Sprintf("// changed in round %d\n", round)
		lines = append(lines[:mid/2], append([]string{"inserted one\n", "inserted two\n"}, lines[mid/2:]...)...)
		lines = append(lines, fmt.Sprintf("// appended %d\n", round))
		if err := os.WriteFile(full, []byte(strings.Join(lines, "")), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

type benchEnv struct {
	ctx   context.Context
	ws    string
	store *fs.Storage
	text  []string
	cpu   time.Duration
}

func newBenchEnv(b *testing.B, files int, mb int64) *benchEnv {
	b.Helper()
	dir := b.TempDir()
	e := &benchEnv{ctx: context.Background(), ws: filepath.Join(dir, "ws")}
	e.text = benchTree(b, e.ws, files, mb<<20)
	var err error
	if e.store, err = fs.NewOS(filepath.Join(dir, "store")); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.store.Close() })
	return e
}

// op runs f on a fresh Manager, as a fresh process would, under the pprof
// label op=<benchmark name>, adding its CPU time to e.cpu: wall clock is
// noisy on a shared machine.
func (e *benchEnv) op(b *testing.B, f func(m *checkpoint.Manager) error) {
	b.Helper()
	c0 := cputime.Self()
	defer func() { e.cpu += cputime.Self() - c0 }()
	pprof.Do(e.ctx, pprof.Labels("op", b.Name()), func(context.Context) {
		m, err := checkpoint.OpenDir(e.ctx, e.store, e.ws)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		if err := f(m); err != nil {
			b.Fatal(err)
		}
	})
}

func (e *benchEnv) createTree(b *testing.B, id string) {
	e.op(b, func(m *checkpoint.Manager) error { _, err := m.CreateTree(e.ctx, id); return err })
}

func BenchmarkCheckpoint(b *testing.B) {
	e := newBenchEnv(b, 5000, 100)
	e.createTree(b, "cp0")
	rng := rand.New(rand.NewPCG(7, 7))
	pick := func() []string {
		rng.Shuffle(len(e.text), func(i, j int) { e.text[i], e.text[j] = e.text[j], e.text[i] })
		return e.text[:10]
	}
	round := 0
	report := func(b *testing.B, cpu0 time.Duration) {
		b.ReportMetric(float64(e.cpu-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	}
	b.Run("incremental", func(b *testing.B) {
		defer report(b, e.cpu)
		for b.Loop() {
			b.StopTimer()
			round++
			edit(b, e.ws, pick(), round)
			b.StartTimer()
			e.createTree(b, fmt.Sprintf("cp%d", round))
		}
	})
	b.Run("diff", func(b *testing.B) {
		// As in cpbench: the snapshot before the one diffed is of cp0's
		// tree, so the stat cache holds all of cp0's trees.
		e.op(b, func(m *checkpoint.Manager) error {
			_, err := m.Rewind(e.ctx, "cp0", false)
			return err
		})
		e.createTree(b, "back")
		round++
		edit(b, e.ws, pick(), round)
		e.createTree(b, fmt.Sprintf("cp%d", round))
		defer report(b, e.cpu)
		for b.Loop() {
			e.op(b, func(m *checkpoint.Manager) error {
				_, err := m.Rewind(e.ctx, "cp0", true)
				return err
			})
		}
	})
	b.Run("rewind", func(b *testing.B) {
		var setup time.Duration
		defer func() { report(b, e.cpu+setup) }()
		for b.Loop() {
			b.StopTimer()
			round++
			edit(b, e.ws, pick(), round)
			c := e.cpu
			e.createTree(b, fmt.Sprintf("cp%d", round))
			setup -= e.cpu - c
			b.StartTimer()
			e.op(b, func(m *checkpoint.Manager) error {
				_, err := m.Rewind(e.ctx, "cp0", false)
				return err
			})
		}
	})
}
