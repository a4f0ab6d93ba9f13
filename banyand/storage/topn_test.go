package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/topn"
	"github.com/banyand-io/banyand/internal/cputime"
	"github.com/banyand-io/banyand/pkg/route"
)

// fixedSchemas serves one schema snapshot.
type fixedSchemas struct{ snap *schema.Snapshot }

func (f fixedSchemas) Current() *schema.Snapshot { return f.snap }

const cpmMeasure = "instance_cpm"

// cpmSchemas is an OAP-shaped measure (entity service, instance; a
// minute interval) and aggs over it.
func cpmSchemas(aggs ...*databasev1.TopNAggregation) (fixedSchemas, *databasev1.Measure) {
	m := &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: cpmMeasure},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "instance", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields:   []*databasev1.FieldSpec{{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity:   &databasev1.Entity{TagNames: []string{"service", "instance"}},
		Interval: "1m",
	}
	snap := &schema.Snapshot{Rev: 1, Measures: map[schema.Key]*databasev1.Measure{{Group: testGroup, Name: cpmMeasure}: m},
		TopNAggregations: map[schema.Key]*databasev1.TopNAggregation{}}
	for _, a := range aggs {
		a.Metadata = &commonv1.Metadata{Group: testGroup, Name: a.GetMetadata().GetName()}
		a.SourceMeasure = m.GetMetadata()
		a.FieldName = "value"
		snap.TopNAggregations[schema.Key{Group: testGroup, Name: a.GetMetadata().GetName()}] = a
	}
	return fixedSchemas{snap}, m
}

// cpmWrite is the cluster write of instance i of service s at ts.
func cpmWrite(tb testing.TB, shard uint32, s, i int, ts time.Time, v int64) []byte {
	svc, inst := fmt.Sprintf("svc_%d", s), fmt.Sprintf("inst_%d_%d", s, i)
	k, err := route.AppendSeriesKey(nil, cpmMeasure, []route.EntityValue{route.StrValue(svc), route.StrValue(inst)})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := proto.Marshal(&clusterv1.MeasureWrite{Group: testGroup, Name: cpmMeasure, ShardId: shard, SeriesKey: k, DataPoint: &measurev1.DataPointValue{
		Timestamp:   timestamppb.New(ts),
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{str(svc), str(inst)}}},
		Fields:      []*modelv1.FieldValue{{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: v}}}},
		Version:     1,
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// The rankings a batch changes are records of its own commit, one a
// window, shard and group-by value, readable as a measure with
// topn.ResultSchema; a store opened again on the directory goes on from
// them.
func TestTopNRankingsAreStoredWithTheBatch(t *testing.T) {
	src, m := cpmSchemas(&databasev1.TopNAggregation{Metadata: &commonv1.Metadata{Name: "top2"},
		GroupByTagNames: []string{"service"}, FieldValueSort: modelv1.Sort_SORT_DESC, CountersNumber: 2})
	agg := src.snap.TopNAggregations[schema.Key{Group: testGroup, Name: "top2"}]
	dir := t.TempDir()
	open := func() *Store {
		s := New(Config{Dir: dir}, nil, nil)
		s.PreAggregateTopN(src)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	read := func(s *Store) map[string][]string {
		t.Helper()
		resp, err := s.QueryMeasure(context.Background(), &clusterv1.MeasureQuery{Schema: topn.ResultSchema(agg, m, modelv1.Sort_SORT_DESC), Request: &measurev1.QueryRequest{
			Groups: []string{testGroup}, Name: topn.RecordName(topn.AggID(agg), modelv1.Sort_SORT_DESC), TimeRange: timeRange(base, base.Add(time.Hour)),
			Criteria:        eq(topn.TagSort, intv(int64(modelv1.Sort_SORT_DESC))), // the rankings, not the windows' markers
			TagProjection:   &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: topn.TagFamily, Tags: []string{"service"}}}},
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{topn.FieldList}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, dp := range resp.GetDataPoints() {
			items, err := topn.Items(dp.GetFields()[0].GetValue().GetBinaryData())
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("%s %s", dp.GetTimestamp().AsTime().Sub(base), dp.GetTagFamilies()[0].GetTags()[0].GetValue().GetStr().GetValue())
			for _, it := range items {
				out[k] = append(out[k], fmt.Sprintf("%s=%d", it.GetEntity()[1].GetValue().GetStr().GetValue(), it.GetValue().GetInt().GetValue()))
			}
		}
		return out
	}
	s := open()
	if errs := s.WriteMeasure(context.Background(), [][]byte{
		cpmWrite(t, 0, 0, 0, base, 5), cpmWrite(t, 0, 0, 1, base.Add(10*time.Second), 7), cpmWrite(t, 0, 0, 2, base, 6),
		cpmWrite(t, 0, 1, 0, base, 1), cpmWrite(t, 0, 0, 0, base.Add(time.Minute), 3),
	}); errs != nil {
		t.Fatal(errs)
	}
	want := map[string][]string{"0s svc_0": {"inst_0_1=7", "inst_0_2=6"}, "0s svc_1": {"inst_1_0=1"}, "1m0s svc_0": {"inst_0_0=3"}}
	if got := read(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored rankings %v, want %v", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	if errs := s.WriteMeasure(context.Background(), [][]byte{cpmWrite(t, 0, 0, 3, base, 8)}); errs != nil {
		t.Fatal(errs)
	}
	want["0s svc_0"] = []string{"inst_0_3=8", "inst_0_1=7"}
	if got := read(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopening, stored rankings %v, want %v", got, want)
	}
}

// BenchmarkWriteMeasureTopN is the data node's measure write path
// (WriteMeasure: decode, commit) for an OAP-shaped measure of 1000 series
// (100 services of 10 instances, a point a series a minute, the minutes
// in order, over two shards), without and
// with a top-N aggregation kept at write time: grouped by service (100
// rankings of 10 a window, shard) or not (one of up to 1000). cpu-ns/write is
// the process's CPU time per write.
func BenchmarkWriteMeasureTopN(b *testing.B) {
	const services, instances = 100, 10
	for _, c := range []struct {
		name string
		agg  *databasev1.TopNAggregation
	}{
		{"off", nil},
		{"by-service", &databasev1.TopNAggregation{Metadata: &commonv1.Metadata{Name: "t"}, GroupByTagNames: []string{"service"},
			FieldValueSort: modelv1.Sort_SORT_DESC, CountersNumber: 1000, LruSize: 10}},
		{"ungrouped", &databasev1.TopNAggregation{Metadata: &commonv1.Metadata{Name: "t"},
			FieldValueSort: modelv1.Sort_SORT_DESC, CountersNumber: 1000, LruSize: 10}},
	} {
		for _, size := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/batch=%d", c.name, size), func(b *testing.B) {
				s := New(Config{Dir: b.TempDir()}, nil, nil)
				if c.agg != nil {
					src, _ := cpmSchemas(proto.CloneOf(c.agg))
					s.PreAggregateTopN(src)
				}
				if err := s.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
				// Minute after minute, each in series order.
				all := make([][]byte, 0, b.N*size)
				for n := 0; len(all) < b.N*size; n++ {
					w, sv, in := n/(services*instances), n/instances%services, n%instances
					all = append(all, cpmWrite(b, uint32(n%2), sv, in, base.Add(time.Duration(w)*time.Minute), int64((sv*instances+in)*7%1000+w)))
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cputime.Of(b)
				for i := range b.N {
					at := i * size
					if errs := s.WriteMeasure(context.Background(), all[at:at+size]); errs != nil {
						b.Fatal(errs)
					}
				}
				b.ReportMetric(float64((cputime.Of(b)-cpu0).Nanoseconds())/float64(b.N*size), "cpu-ns/write")
			})
		}
	}
}

// startTopNStore starts a store in a temporary directory that keeps the
// rankings of one aggregation "all" over the cpm measure (descending,
// counters of countersNumber, two windows open); it is closed with the
// test.
func startTopNStore(t *testing.T, countersNumber int32) (*databasev1.Measure, *databasev1.TopNAggregation, *Store) {
	t.Helper()
	src, m := cpmSchemas(&databasev1.TopNAggregation{Metadata: &commonv1.Metadata{Name: "all"},
		FieldValueSort: modelv1.Sort_SORT_DESC, CountersNumber: countersNumber, LruSize: 2})
	s := New(Config{Dir: t.TempDir()}, nil, nil)
	s.PreAggregateTopN(src)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return m, src.snap.TopNAggregations[schema.Key{Group: testGroup, Name: "all"}], s
}

// Batches written at once, each changing the same rankings: whatever
// order their commits land in, the stored ranking is the newest, which
// counts every write.
func TestTopNRankingsOfConcurrentBatches(t *testing.T) {
	m, agg, s := startTopNStore(t, 1000)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const writers, batches, minutes = 4, 10, 5
	msgs := make([][][][]byte, writers) // writer, batch, message
	for w := range writers {
		msgs[w] = make([][][]byte, batches)
		for b := range batches {
			for minute := range minutes {
				msgs[w][b] = append(msgs[w][b], cpmWrite(t, 0, w, b, base.Add(time.Duration(minute)*time.Minute), int64(w*100+b)))
			}
		}
	}
	errc := make(chan error, writers)
	for w := range writers {
		go func() {
			for b := range batches {
				if errs := s.WriteMeasure(context.Background(), msgs[w][b]); errs != nil {
					errc <- fmt.Errorf("writer %d: %v", w, errs)
					return
				}
			}
			errc <- nil
		}()
	}
	for range writers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	resp, err := s.QueryMeasure(context.Background(), &clusterv1.MeasureQuery{Schema: topn.ResultSchema(agg, m, modelv1.Sort_SORT_DESC), Request: &measurev1.QueryRequest{
		Groups: []string{testGroup}, Name: topn.RecordName(topn.AggID(agg), modelv1.Sort_SORT_DESC), TimeRange: timeRange(base, base.Add(time.Hour)),
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{topn.FieldList}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetDataPoints()); n != minutes {
		t.Fatalf("%d rankings stored, want one a minute (%d)", n, minutes)
	}
	for _, dp := range resp.GetDataPoints() {
		items, err := topn.Items(dp.GetFields()[0].GetValue().GetBinaryData())
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != writers*batches || items[0].GetValue().GetInt().GetValue() != (writers-1)*100+batches-1 {
			t.Errorf("ranking of %s: %d series, first %v; want %d, first %d", dp.GetTimestamp().AsTime(), len(items), items[0].GetValue(), writers*batches, (writers-1)*100+batches-1)
		}
	}
}

// A write to a window past the lru_size newest reads its ranking back
// before counting in it: the late point joins the ranking, which keeps
// the points counted before.
func TestTopNLateWriteReadsTheRankingBack(t *testing.T) {
	m, agg, s := startTopNStore(t, 10)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for minute := range 6 {
		if errs := s.WriteMeasure(context.Background(), [][]byte{cpmWrite(t, 0, 0, 0, base.Add(time.Duration(minute)*time.Minute), 5)}); errs != nil {
			t.Fatal(errs)
		}
	}
	if held := len(s.topn.rankings); held > 3 {
		t.Fatalf("%d rankings held, want those of the lru_size newest windows and the newest (3 at most)", held)
	}
	if errs := s.WriteMeasure(context.Background(), [][]byte{cpmWrite(t, 0, 0, 1, base, 9)}); errs != nil {
		t.Fatal(errs)
	}
	resp, err := s.QueryMeasure(context.Background(), &clusterv1.MeasureQuery{Schema: topn.ResultSchema(agg, m, modelv1.Sort_SORT_DESC), Request: &measurev1.QueryRequest{
		Groups: []string{testGroup}, Name: topn.RecordName(topn.AggID(agg), modelv1.Sort_SORT_DESC), TimeRange: timeRange(base, base.Add(time.Second)),
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{topn.FieldList}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetDataPoints()) != 1 {
		t.Fatalf("%d rankings of the first minute, want 1: %v", len(resp.GetDataPoints()), resp.GetDataPoints())
	}
	items, err := topn.Items(resp.GetDataPoints()[0].GetFields()[0].GetValue().GetBinaryData())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%s=%d", it.GetEntity()[1].GetValue().GetStr().GetValue(), it.GetValue().GetInt().GetValue()))
	}
	if fmt.Sprint(got) != "[inst_0_1=9 inst_0_0=5]" {
		t.Fatalf("first minute's ranking after a late write: %v, want [inst_0_1=9 inst_0_0=5]", got)
	}
}
