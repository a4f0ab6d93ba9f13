package tsdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkWritePath measures the CPU a stream write costs to reach an
// sstable, two ways, for docs/design/write-buffer.md:
//
//   - memtable: what the store does today, DB.Write (unsynced: fsync is
//     the same for both) into Pebble's skiplist memtable, flushed at the
//     end so the flush is counted too;
//   - buffers: a prototype of the alternative, not used by the store: each
//     batch appended to a log file, each element appended to its series'
//     buffer (arrival order is time order, so nothing is sorted), and every
//     64 MB the buffers written out in key order as one sstable that Pebble
//     ingests, with no skiplist in between.
//
// The workload is the load tool's: batches of 500 writes over 1000 series
// at ever later timestamps, 160-byte values. cpu-ns/write is the process's
// user+system CPU per write, background goroutines included.
func BenchmarkWritePath(b *testing.B) {
	value := make([]byte, 160)
	const size, series = 500, 1000
	keys := make([][]byte, series)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "service_%d\x00instance_%d", i%50, i)
	}
	gen := func(batch []Write, seq *int) {
		for j := range batch {
			batch[j] = Write{Kind: KindStream, Group: "bench_stream", Name: "bench_stream", SeriesKey: keys[*seq%series],
				Timestamp: 1_700_000_000_000_000_000 + int64(*seq/series)*int64(time.Millisecond),
				ElementID: fmt.Sprintf("b1-%d", *seq), Value: value}
			*seq++
		}
	}
	report := func(b *testing.B, cpu0 time.Duration) {
		b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*size), "cpu-ns/write")
		b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
	}

	b.Run("memtable", func(b *testing.B) {
		db := openDB(b, b.TempDir(), Options{NoSync: true})
		batch := make([]Write, size)
		seq := 0
		b.ResetTimer()
		cpu0 := processCPU(b)
		for range b.N {
			gen(batch, &seq)
			if err := db.Write(batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.pdb.Flush(); err != nil {
			b.Fatal(err)
		}
		report(b, cpu0)
	})

	b.Run("buffers", func(b *testing.B) {
		dir := b.TempDir()
		db := openDB(b, filepath.Join(dir, "db"), Options{NoSync: true})
		log, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			b.Fatal(err)
		}
		defer log.Close()
		bufs := newSeriesBuffers(db, dir)
		batch := make([]Write, size)
		var logBuf []byte
		seq := 0
		b.ResetTimer()
		cpu0 := processCPU(b)
		for range b.N {
			gen(batch, &seq)
			logBuf = logBuf[:0]
			for i := range batch {
				w := &batch[i]
				logBuf = appendLP(logBuf, string(w.SeriesKey))
				logBuf = appendInt64(logBuf, w.Timestamp)
				logBuf = appendLP(logBuf, w.ElementID)
				logBuf = appendLP(logBuf, string(w.Value))
				bufs.add(w)
			}
			if _, err := log.Write(logBuf); err != nil {
				b.Fatal(err)
			}
			if bufs.bytes >= 64<<20 {
				bufs.flush(b)
			}
		}
		bufs.flush(b)
		report(b, cpu0)
	})
}

// seriesBuffers is the prototype's in-memory layer: one append-only buffer
// per series, written out as one sorted sstable.
type seriesBuffers struct {
	db     *DB
	dir    string
	prefix []byte // one group, name and segment in this workload
	series map[uint64]*seriesBuffer
	bytes  int
	files  int
}

type seriesBuffer struct {
	key     []byte
	entries []bufEntry
	arena   []byte
}

type bufEntry struct {
	ts      int64
	id, val uint32 // offsets into arena
	valLen  uint32
	idLen   uint16
}

func newSeriesBuffers(db *DB, dir string) *seriesBuffers {
	return &seriesBuffers{db: db, dir: dir, series: map[uint64]*seriesBuffer{}}
}

func (s *seriesBuffers) add(w *Write) {
	if s.prefix == nil {
		s.prefix = namePrefix(nil, w.Kind, w.Group, 0, w.Name)
	}
	h := SeriesHash(w.SeriesKey)
	sb := s.series[h]
	if sb == nil {
		sb = &seriesBuffer{key: append([]byte(nil), w.SeriesKey...)}
		s.series[h] = sb
	}
	e := bufEntry{ts: w.Timestamp, id: uint32(len(sb.arena)), idLen: uint16(len(w.ElementID))}
	sb.arena = append(sb.arena, w.ElementID...)
	e.val, e.valLen = uint32(len(sb.arena)), uint32(len(w.Value))
	sb.arena = append(sb.arena, w.Value...)
	sb.entries = append(sb.entries, e)
	s.bytes += len(w.ElementID) + len(w.Value) + 24
}

// flush writes every buffered element as one sstable in key order and has
// Pebble ingest it.
func (s *seriesBuffers) flush(b *testing.B) {
	if s.bytes == 0 {
		return
	}
	hashes := make([]uint64, 0, len(s.series))
	for h := range s.series {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	path := filepath.Join(s.dir, fmt.Sprintf("ingest-%d.sst", s.files))
	s.files++
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		b.Fatal(err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
		TableFormat: s.db.pdb.TableFormat(), MergerName: measureMerger.Name,
	})
	var key, val []byte
	for _, h := range hashes {
		sb := s.series[h]
		// Arrival order is time order for a series, element ids break ties;
		// sort only when a late element broke it.
		less := func(x, y bufEntry) int {
			if x.ts != y.ts {
				return cmpInt64(x.ts, y.ts)
			}
			return slices.Compare(sb.arena[x.id:x.id+uint32(x.idLen)], sb.arena[y.id:y.id+uint32(y.idLen)])
		}
		if !slices.IsSortedFunc(sb.entries, less) {
			slices.SortFunc(sb.entries, less)
		}
		for _, e := range sb.entries {
			key = dataKey(append(key[:0], s.prefix...), h, e.ts, string(sb.arena[e.id:e.id+uint32(e.idLen)]))
			val = appendStreamValue(val[:0], sb.key, sb.arena[e.val:e.val+e.valLen])
			if err := w.Set(key, val); err != nil {
				b.Fatal(err)
			}
		}
		sb.entries, sb.arena = sb.entries[:0], sb.arena[:0]
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := s.db.pdb.Ingest(context.Background(), []string{path}); err != nil {
		b.Fatal(err)
	}
	s.bytes = 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// processCPU is the process's user+system CPU time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
