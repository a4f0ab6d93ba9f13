package tsdb

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkWrite isolates the Pebble commit: synced (what an ack costs)
// versus unsynced (the CPU cost alone), for batches of 100 and 1000
// writes with 160-byte values.
func BenchmarkWrite(b *testing.B) {
	value := make([]byte, 160)
	for _, sync := range []bool{true, false} {
		for _, size := range []int{100, 1000} {
			b.Run(fmt.Sprintf("sync=%v/batch=%d", sync, size), func(b *testing.B) {
				db := openDB(b, b.TempDir(), Options{NoSync: !sync})
				batches := make([][]Write, 16)
				for j := range batches {
					for i := range size {
						batches[j] = append(batches[j], Write{
							Kind: KindStream, Group: "g", Name: "n", SeriesKey: fmt.Appendf(nil, "series-%d", i%64),
							Timestamp: int64(j*size + i), ElementID: fmt.Sprint(i), Value: value,
						})
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := db.Write(context.Background(), batches[i%len(batches)]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
			})
		}
	}
}

// BenchmarkWriteInterleaved is the shape of a real load without the fsync:
// batches of 500 writes spread over 1000 series at ever later timestamps,
// so the memtable keeps growing as it does under sustained writes.
func BenchmarkWriteInterleaved(b *testing.B) {
	value := make([]byte, 160)
	db := openDB(b, b.TempDir(), Options{NoSync: true})
	const size, series = 500, 1000
	keys := make([][]byte, series)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "series-%d", i)
	}
	batch := make([]Write, size)
	seq := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range batch {
			batch[j] = Write{Kind: KindStream, Group: "g", Name: "n", SeriesKey: keys[seq%series],
				Timestamp: int64(seq / series), ElementID: "e" + fmt.Sprint(seq), Value: value}
			seq++
		}
		if err := db.Write(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
}
