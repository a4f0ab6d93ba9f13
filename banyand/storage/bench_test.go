package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// benchBatches returns n distinct batches of size stream writes, each with
// about 100 bytes of tag payload (the binary tag) besides the entity tags.
func benchBatches(b *testing.B, n, size int) [][][]byte {
	payload := make([]byte, 100)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	out := make([][][]byte, n)
	for j := range out {
		out[j] = make([][]byte, size)
		for i := range size {
			e := elem{service: fmt.Sprintf("svc-%d", i%16), instance: fmt.Sprintf("inst-%d", i%64),
				id: fmt.Sprintf("b%d-e%d", j, i), ts: base.Add(time.Duration(j*size+i) * time.Millisecond), code: int64(i)}
			v := e.value()
			v.TagFamilies[1].Tags[3] = &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: payload}}
			m, err := proto.Marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream,
				SeriesKey: streamSeriesKey(b, e.service, e.instance), Element: v})
			if err != nil {
				b.Fatal(err)
			}
			out[j][i] = m
		}
	}
	return out
}

// BenchmarkCommitBatch measures the write listener's path: decode a batch
// of StreamWrite messages and commit it with one synced Pebble write. With
// small batches the fsync dominates (writes/s grows almost linearly with
// the batch size); "parallel" runs several batches at once, which Pebble's
// commit pipeline folds into shared fsyncs.
func BenchmarkCommitBatch(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s := openStore(b, b.TempDir(), nil)
			batches := benchBatches(b, 16, size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if errs := s.WriteStream(ctx, batches[i%len(batches)]); errs != nil {
					b.Fatal(errs)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
		})
		b.Run(fmt.Sprintf("batch=%d/parallel", size), func(b *testing.B) {
			s := openStore(b, b.TempDir(), nil)
			batches := benchBatches(b, 16, size)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if errs := s.WriteStream(ctx, batches[next.Add(1)%int64(len(batches))]); errs != nil {
						b.Error(errs)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
