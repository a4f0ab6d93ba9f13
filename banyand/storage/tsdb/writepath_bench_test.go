package tsdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/banyand-io/banyand/internal/cputime"
)

// BenchmarkWritePath measures the CPU a stream write costs to reach an
// sstable, two ways (docs/design/write-buffer.md):
//
//   - buffer: DB.Write, the store's path: the batch logged, each element
//     appended to its series' buffer, the buffer written out in key order
//     as one sstable that Pebble ingests, every 64 MB;
//   - memtable: the path the store had before, kept here for comparison:
//     the same keys and values committed as a Pebble batch into its
//     skiplist memtable, which Pebble flushes.
//
// Neither syncs (fsync is the same for both). The workload is the load
// tool's: batches of 500 writes over 1000 series at ever later
// timestamps, 160-byte values. cpu-ns/write is the process's user+system
// CPU per write, background goroutines included.
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
		b.ReportMetric(float64((cputime.Of(b)-cpu0).Nanoseconds())/float64(b.N*size), "cpu-ns/write")
		b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
	}

	b.Run("buffer", func(b *testing.B) {
		db := openDB(b, b.TempDir(), Options{NoSync: true})
		batch := make([]Write, size)
		seq := 0
		b.ResetTimer()
		cpu0 := cputime.Of(b)
		for range b.N {
			gen(batch, &seq)
			if err := db.Write(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		report(b, cpu0)
	})

	b.Run("memtable", func(b *testing.B) {
		db := openDB(b, b.TempDir(), Options{NoSync: true})
		batch := make([]Write, size)
		seq := 0
		b.ResetTimer()
		cpu0 := cputime.Of(b)
		var key, hdr []byte
		for range b.N {
			gen(batch, &seq)
			pb := db.pdb.NewBatch()
			for i := range batch {
				w := &batch[i]
				key = dataKey(namePrefix(key[:0], w.Kind, w.Group, 0, w.Name), SeriesHash(w.SeriesKey), w.Timestamp, w.ElementID)
				hdr = append(appendStreamValue(hdr[:0], w.Version, w.SeriesKey, nil), w.Value...)
				if err := pb.Set(key, hdr, nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := pb.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			_ = pb.Close()
		}
		if err := db.pdb.Flush(); err != nil {
			b.Fatal(err)
		}
		report(b, cpu0)
	})
}

// BenchmarkWritePathRealistic is BenchmarkWritePath's buffer path for the
// load tool's realistic shape (seven tags of mixed types: a stored element
// or data point of about 240 bytes) over its 64 series, for a stream and
// for a measure, whose records a flush writes as merge operands. The
// writes arrive as the load tool's four writers' do: each series' next
// four timestamps in reverse, so the buffer sorts every series.
func BenchmarkWritePathRealistic(b *testing.B) {
	value := make([]byte, 240) // the same every write, as the load tool's tags are
	for i := range value {
		value[i] = 'a' + byte(i*7%26)
	}
	const size, series = 500, 64
	keys := make([][]byte, series)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "svc-%d\x00%d", i/10, i%10)
	}
	for _, kind := range []Kind{KindStream, KindMeasure} {
		name := map[Kind]string{KindStream: "stream", KindMeasure: "measure"}[kind]
		b.Run(name, func(b *testing.B) {
			db := openDB(b, b.TempDir(), Options{NoSync: true})
			batch := make([]Write, size)
			seq := 0
			b.ResetTimer()
			cpu0 := cputime.Of(b)
			for range b.N {
				for j := range batch {
					const block = 4 * series // four rounds of every series, the last round first
					s := seq - seq%block + (3-seq%block/series)*series + seq%series
					batch[j] = Write{Kind: kind, Group: "bench_" + name, Name: "bench_" + name, SeriesKey: keys[s%series],
						Timestamp: 1_700_000_000_000_000_000 + int64(s/series)*int64(time.Millisecond), Value: value}
					if kind == KindStream {
						batch[j].ElementID = fmt.Sprintf("b1-%d", s)
					}
					seq++
				}
				if err := db.Write(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((cputime.Of(b)-cpu0).Nanoseconds())/float64(b.N*size), "cpu-ns/write")
		})
	}
}
