package test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/internal/cputime"
)

// BenchmarkClusterTopN compares MeasureService.TopN answered from the
// points (query time, the aggregation pushed down) with TopN answered
// from the rankings the data nodes keep as writes arrive
// (--topn-pre-aggregation), on two in-process clusters (a liaison and two
// data nodes each, group of 8 shards) holding the same data: 1M points
// (400 series of 100 services, 2500 one-minute windows) and OAP's
// typical dashboard range (1000 series, 30 windows). The aggregations
// over the benchmark measure: "all" (no group-by, counters_number 1000),
// "all_10" (counters_number 10) and "by_svc" (grouped by svc). The
// "write" sub-benchmarks write the data once and report the process's
// CPU per write (the client, the liaison and the data nodes of the
// cluster written to); the queries ask SUM top 10 over the whole range,
// and report how many of the ten items the rankings answer are the
// points' answer, at the same rank with the same value
// (items-as-query-time).
//
//	go test -run '^$' -bench BenchmarkClusterTopN -benchtime 5x ./test/
func BenchmarkClusterTopN(b *testing.B) {
	clusters := map[bool]*cluster{false: startClusterWith(b, 2, 1, false), true: startClusterWith(b, 2, 1, true)}
	way := map[bool]string{false: "query-time", true: "pre-aggregated"}
	for _, set := range []struct {
		name, group    string
		points, series int
	}{
		{"1M", "topn_1m", 1_000_000, aggSeries},
		{"oap-1000x30", "topn_oap", 30_000, 1000},
	} {
		for _, pre := range []bool{false, true} {
			conn := clusters[pre].liaisons[0]
			createAggBench(b, conn, set.group)
			createTopNBench(b, conn, set.group)
			if pre {
				waitTopNPre(b, conn, set.group, aggMeasure, "all", baseTime.Add(2*time.Hour))
			}
			var perWrite float64 // written once, however often the benchmark runs
			b.Run(set.name+"/write/"+way[pre], func(b *testing.B) {
				if perWrite == 0 {
					cpu0 := cputime.Of(b)
					writeAggBenchPoints(b, conn, set.group, set.points, set.series)
					perWrite = float64((cputime.Of(b) - cpu0).Nanoseconds()) / float64(set.points)
				}
				b.ReportMetric(perWrite, "cpu-ns/write")
			})
		}
		for _, q := range []struct {
			name string
			req  func(*measurev1.TopNRequest)
		}{
			{"all-sum-top10", func(*measurev1.TopNRequest) {}},
			{"all_10-sum-top10", func(r *measurev1.TopNRequest) { r.Name = "all_10" }},
			{"by_svc-sum-top10", func(r *measurev1.TopNRequest) { r.Name = "by_svc" }},
			{"by_svc-sum-top10-svc-7", func(r *measurev1.TopNRequest) {
				r.Name = "by_svc"
				r.Conditions = []*modelv1.Condition{{Name: "svc", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("svc-7")}}
			}},
		} {
			for _, pre := range []bool{false, true} {
				conn := clusters[pre].liaisons[0]
				b.Run(set.name+"/"+q.name+"/"+way[pre], func(b *testing.B) {
					var resp *measurev1.TopNResponse
					for b.Loop() {
						var err error
						if resp, err = topNBenchQuery(conn, set.group, q.req); err != nil {
							b.Fatal(err)
						}
						if len(resp.GetLists()) != 1 || len(resp.GetLists()[0].GetItems()) == 0 {
							b.Fatal("no answer")
						}
					}
					if pre {
						// How many of the ten items are the query time's,
						// at the same rank with the same value.
						want, err := topNBenchQuery(clusters[false].liaisons[0], set.group, q.req)
						if err != nil {
							b.Fatal(err)
						}
						same := 0
						for i, it := range resp.GetLists()[0].GetItems() {
							if w := want.GetLists()[0].GetItems(); i < len(w) && proto.Equal(it, w[i]) {
								same++
							}
						}
						b.ReportMetric(float64(same), "items-as-query-time")
					}
				})
			}
		}
	}
}

// createTopNBench creates the benchmark's top-N aggregations in group.
func createTopNBench(tb testing.TB, conn *grpc.ClientConn, group string) {
	tb.Helper()
	for _, a := range []*databasev1.TopNAggregation{
		{Metadata: &commonv1.Metadata{Name: "all"}, CountersNumber: 1000},
		{Metadata: &commonv1.Metadata{Name: "all_10"}, CountersNumber: 10},
		{Metadata: &commonv1.Metadata{Name: "by_svc"}, GroupByTagNames: []string{"svc"}, CountersNumber: 1000},
	} {
		a.Metadata.Group = group
		a.SourceMeasure = &commonv1.Metadata{Group: group, Name: aggMeasure}
		a.FieldName, a.FieldValueSort, a.LruSize = "value", modelv1.Sort_SORT_DESC, 10
		if _, err := databasev1.NewTopNAggregationRegistryServiceClient(conn).Create(context.Background(),
			&databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: a}); err != nil {
			tb.Fatalf("create top-N aggregation: %v", err)
		}
	}
}

// topNBenchQuery asks SUM top 10 of "all" over the benchmark's range,
// changed by mod.
func topNBenchQuery(conn *grpc.ClientConn, group string, mod func(*measurev1.TopNRequest)) (*measurev1.TopNResponse, error) {
	req := &measurev1.TopNRequest{
		Groups: []string{group}, Name: "all", TopN: 10, Agg: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM,
		TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-365 * 24 * time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
	}
	mod(req)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return measurev1.NewMeasureServiceClient(conn).TopN(ctx, req)
}
