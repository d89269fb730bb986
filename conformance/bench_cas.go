package conformance

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
)

// BenchCAS measures the blob store on the backends newBackend makes, next to
// the raw cost of the same work without a store, so that the store's
// overhead reads as a ratio:
//
//	Put/<json|random>/<64KiB|4MiB>/<sha256|blake3>   x-raw = Put / (hash + zstd encode)
//	Get/<json|random>/<64KiB|4MiB>/<sha256|blake3>   x-raw = Get / (zstd decode + hash)
//	Raw/HashZstd/...                                 hash + zstd encode alone (what x-raw divides by)
//	Files/5000x20KiB/<Single|Batch>                  a checkpoint's worth of small files
//	Files/5000x20KiB/Speedup                         x-faster = single Puts / one batch, same run
//
// Every Put stores new content (a counter is stamped into the bytes), so
// dedup never makes a put free. Put runs on a store whose fan-out
// directories exist (steady state, see casWarm).
func BenchCAS(b *testing.B, newBackend func(tb testing.TB) backend.Storage) {
	kinds := []struct {
		name string
		gen  func(n int) []byte
	}{
		{"json", func(n int) []byte { return casJSON(n, 1) }},
		{"random", func(n int) []byte { return casRandom(n, 1) }},
	}
	sizes := []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"4MiB", 4 << 20}}
	algos := []cas.Algorithm{cas.SHA256, cas.BLAKE3}

	for _, k := range kinds {
		for _, sz := range sizes {
			data := k.gen(sz.n)
			for _, algo := range algos {
				name := fmt.Sprintf("%s/%s/%v", k.name, sz.name, algo)
				b.Run("Put/"+name, func(b *testing.B) {
					st := newBackend(b)
					casWarm(b, st, algo)
					s := casOpen(b, st, cas.WithAlgorithm(algo))
					raw := casNewRaw(b, algo)
					buf := append([]byte(nil), data...)
					b.SetBytes(int64(len(buf)))
					i := uint64(0)
					var tPut, tRaw time.Duration
					for b.Loop() {
						i++
						binary.LittleEndian.PutUint64(buf, i)
						t0 := time.Now()
						if _, err := s.Put(b.Context(), buf); err != nil {
							b.Fatal(err)
						}
						tPut += time.Since(t0)
						// The same work without the store, timed apart
						// and interleaved so both see the same machine.
						b.StopTimer()
						tRaw += raw.encode(buf)
						b.StartTimer()
					}
					b.ReportMetric(float64(tPut)/float64(tRaw), "x-raw")
				})
				b.Run("Get/"+name, func(b *testing.B) {
					s := casOpen(b, newBackend(b), cas.WithAlgorithm(algo))
					raw := casNewRaw(b, algo)
					ref, err := s.Put(b.Context(), data)
					if err != nil {
						b.Fatal(err)
					}
					comp := raw.enc.EncodeAll(data, nil)
					b.SetBytes(int64(len(data)))
					var tGet, tRaw time.Duration
					for b.Loop() {
						t0 := time.Now()
						if _, err := s.Get(b.Context(), ref); err != nil {
							b.Fatal(err)
						}
						tGet += time.Since(t0)
						b.StopTimer()
						tRaw += raw.decode(comp, len(data))
						b.StartTimer()
					}
					b.ReportMetric(float64(tGet)/float64(tRaw), "x-raw")
				})
				b.Run("Raw/HashZstd/"+name, func(b *testing.B) {
					enc := casEncoder(b)
					var dst []byte
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						casHash(algo).Write(data)
						dst = enc.EncodeAll(data, dst[:0])
					}
				})
			}
		}
	}

	const files, fileSize = 5000, 20 << 10
	var base []byte
	// Each run stamps its own counter into every file: fresh content.
	gen := func(run uint64) [][]byte {
		if base == nil {
			base = casJSON(files*fileSize, 2)
		}
		out := make([][]byte, files)
		for i := range out {
			f := append([]byte(nil), base[i*fileSize:(i+1)*fileSize]...)
			binary.LittleEndian.PutUint64(f, run)
			binary.LittleEndian.PutUint64(f[8:], uint64(i))
			out[i] = f
		}
		return out
	}
	single := func(b *testing.B, s *cas.Store, data [][]byte) {
		for _, d := range data {
			if _, err := s.Put(b.Context(), d); err != nil {
				b.Fatal(err)
			}
		}
	}
	batch := func(b *testing.B, s *cas.Store, data [][]byte) {
		bt := s.NewBatch()
		for _, d := range data {
			if _, err := bt.Put(b.Context(), d); err != nil {
				b.Fatal(err)
			}
		}
		if err := bt.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name string
		put  func(*testing.B, *cas.Store, [][]byte)
	}{{"Single", single}, {"Batch", batch}} {
		b.Run(fmt.Sprintf("Files/%dx20KiB/%s", files, mode.name), func(b *testing.B) {
			s := casOpen(b, newBackend(b))
			b.SetBytes(files * fileSize)
			run := uint64(0)
			for b.Loop() {
				b.StopTimer()
				run++
				data := gen(run)
				b.StartTimer()
				mode.put(b, s, data)
			}
		})
	}
	b.Run(fmt.Sprintf("Files/%dx20KiB/Speedup", files), func(b *testing.B) {
		s := casOpen(b, newBackend(b))
		var tSingle, tBatch time.Duration
		run := uint64(0)
		for b.Loop() {
			run++
			data := gen(2 * run)
			t0 := time.Now()
			single(b, s, data)
			tSingle += time.Since(t0)
			data = gen(2*run + 1)
			t0 = time.Now()
			batch(b, s, data)
			tBatch += time.Since(t0)
		}
		b.ReportMetric(float64(tSingle)/float64(tBatch), "x-faster")
		b.ReportMetric(float64(tSingle.Milliseconds())/float64(run), "single-ms")
		b.ReportMetric(float64(tBatch.Milliseconds())/float64(run), "batch-ms")
	})
}

// casWarm creates the 256 fan-out directories of algo, as in a store in use:
// a fresh store pays one mkdir and directory sync per directory on its first
// puts, which a benchmark of a few dozen puts would otherwise mostly measure.
func casWarm(tb testing.TB, st backend.Storage, algo cas.Algorithm) {
	for i := range 256 {
		if err := st.EnsureDir(tb.Context(), fmt.Sprintf("blobs/%v/%02x", algo, i)); err != nil {
			tb.Fatal(err)
		}
	}
}

// casEncoder is zstd with the settings package cas uses.
func casEncoder(tb testing.TB) *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(8<<20), zstd.WithEncoderCRC(false))
	if err != nil {
		tb.Fatal(err)
	}
	return enc
}

func casHash(algo cas.Algorithm) hash.Hash {
	if algo == cas.BLAKE3 {
		return blake3.New()
	}
	return sha256.New()
}

// casRaw does what a store does to bytes, without the store.
type casRaw struct {
	algo cas.Algorithm
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	buf  []byte
}

func casNewRaw(tb testing.TB, algo cas.Algorithm) *casRaw {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(dec.Close)
	return &casRaw{algo: algo, enc: casEncoder(tb), dec: dec}
}

// encode times hash + zstd encode of data.
func (r *casRaw) encode(data []byte) time.Duration {
	t0 := time.Now()
	h := casHash(r.algo)
	h.Write(data)
	h.Sum(nil)
	r.buf = r.enc.EncodeAll(data, r.buf[:0])
	return time.Since(t0)
}

// decode times zstd decode into a new buffer, as Get returns one, + hash.
func (r *casRaw) decode(comp []byte, size int) time.Duration {
	t0 := time.Now()
	var err error
	if r.buf, err = r.dec.DecodeAll(comp, make([]byte, 0, size)); err != nil {
		panic(err) // the bytes come from r.enc in the same run
	}
	h := casHash(r.algo)
	h.Write(r.buf)
	h.Sum(nil)
	return time.Since(t0)
}
