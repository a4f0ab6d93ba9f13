package tsdb

import (
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
					if err := db.Write(batches[i%len(batches)]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
			})
		}
	}
}
