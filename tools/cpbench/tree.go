package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// buildTree writes a deterministic tree: nested directories, about 80% text
// files (source-like lines, compressible) and 20% binary (random bytes,
// incompressible), sizes spread around the mean. Every mtime is set an hour
// back, as in a real checkout: files written moments before a snapshot are
// racy for trove and git alike and would be re-hashed by both.
func buildTree(root string, n int, total int64) ([]string, int64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	mean := total / int64(n)
	old := time.Now().Add(-time.Hour)
	var paths []string
	var sum int64
	words := strings.Fields("func var return if else for range package import struct type interface map chan go defer select case switch err nil ctx string int byte")
	for i := range n {
		dir := fmt.Sprintf("pkg%02d/sub%02d/leaf%d", i%40, (i/40)%8, (i/320)%4)
		binary := i%5 == 4
		size := mean/4 + rng.Int64N(mean*3/2+1)
		var data []byte
		name := fmt.Sprintf("file%04d.go", i)
		if binary {
			name = fmt.Sprintf("asset%04d.bin", i)
			data = make([]byte, size)
			for j := range data {
				data[j] = byte(rng.UintN(256))
			}
		} else {
			var b bytes.Buffer
			for int64(b.Len()) < size {
				nw := 3 + rng.IntN(8)
				b.WriteString(strings.Repeat("\t", rng.IntN(3)))
				for w := range nw {
					if w > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(words[rng.IntN(len(words))])
				}
				fmt.Fprintf(&b, " // %d\n", rng.IntN(100000))
			}
			data = b.Bytes()
		}
		p := filepath.Join(root, dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, 0, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, 0, err
		}
		if err := os.Chtimes(p, old, old); err != nil {
			return nil, 0, err
		}
		paths = append(paths, filepath.ToSlash(filepath.Join(dir, name)))
		sum += int64(len(data))
	}
	return paths, sum, nil
}

func pickText(paths []string, rng *rand.Rand, k int) []string {
	var text []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".go") {
			text = append(text, p)
		}
	}
	rng.Shuffle(len(text), func(i, j int) { text[i], text[j] = text[j], text[i] })
	out := slices.Clone(text[:k])
	slices.Sort(out)
	return out
}

// changeFiles edits each file the same way in any tree: a line replaced, two
// inserted and one appended.
func changeFiles(root string, paths []string, round int) error {
	for _, p := range paths {
		full := filepath.Join(root, p)
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		lines := strings.SplitAfter(string(data), "\n")
		mid := len(lines) / 2
		lines[mid] = fmt.Sprintf("// changed in round %d\n", round)
		lines = slices.Insert(lines, mid/2, "inserted one\n", "inserted two\n")
		lines = append(lines, fmt.Sprintf("// appended %d\n", round))
		if err := os.WriteFile(full, []byte(strings.Join(lines, "")), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// listTree returns the files under root, as buildTree does.
func listTree(root string) ([]string, int64, error) {
	var paths []string
	var sum int64
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		paths = append(paths, filepath.ToSlash(rel))
		sum += fi.Size()
		return nil
	})
	slices.Sort(paths)
	return paths, sum, err
}
