package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
)

// Aggregation benchmark data: aggSeries series (tag instance, the entity;
// tag svc, one of aggServices), one point a minute each, field value.
const (
	aggMeasure  = "agg_bench"
	aggSeries   = 400
	aggServices = 100
)

// BenchmarkClusterAggregation measures measure aggregations on an
// in-process cluster (a liaison and two data nodes, embedded etcd, group
// of 8 shards without replicas): a group by instance (400 groups) with
// MEAN, and a SUM by svc (100 groups) ranked top 10. Over 1M points the
// data nodes aggregate (pushed down); over 100k points, the same queries
// pushed down and with the points shipped to the liaison (a hinted mark
// on one shard of that group makes it fall back), which is as far as
// point shipping goes: at most 100,000 points a node. The data are
// written once, before the timers.
//
//	go test -run '^$' -bench BenchmarkClusterAggregation -benchtime 10x ./test/
func BenchmarkClusterAggregation(b *testing.B) {
	c := startCluster(b, 2, 1)
	conn := c.liaisons[0]
	sets := []struct {
		name, group string
		points      int
		ship        bool
	}{
		{"pushdown-1M", "agg_1m", 1_000_000, false},
		{"pushdown-100k", "agg_100k", 100_000, false},
		{"shipping-100k", "agg_100k_ship", 100_000, true},
	}
	for _, s := range sets {
		b.Run(s.name, func(b *testing.B) {
			writeAggBench(b, conn, s.group, s.points)
			// A hinted mark makes a group's points shipped to the
			// liaison: over 1M points that fails on the bound of 100,000
			// points a node.
			rec, err := etcd.NewHolderRecorder(etcd.NodeConfig{}, c.etcd.Client(), func() string { return "data-0" })
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := rec.Mark(ctx, s.group, 0); err != nil {
				b.Fatal(err)
			}
			if s.points > 200_000 {
				poll.Within(b, 30*time.Second, "1M points cannot be shipped", func() bool {
					_, err := aggBenchQuery(conn, s.group, aggBenchMean, false)
					return status.Code(err) == codes.InvalidArgument
				})
			}
			if !s.ship {
				if err := rec.Clear(ctx, s.group, 0); err != nil {
					b.Fatal(err)
				}
			}
			poll.Within(b, 30*time.Second, s.name+": the liaison follows the holder records", func() bool {
				resp, err := aggBenchQuery(conn, s.group, aggBenchMean, true)
				if err != nil {
					return false // a stream to a data node may be reconnecting after the writes
				}
				_, _, shipped := pushDownTrace(resp.GetTrace())
				return shipped == s.ship
			})
			for _, q := range []struct {
				name string
				mod  func(*measurev1.QueryRequest)
			}{{"mean-by-instance", aggBenchMean}, {"sum-by-svc-top10", aggBenchSumTop}} {
				b.Run(q.name, func(b *testing.B) {
					for b.Loop() {
						resp, err := aggBenchQuery(conn, s.group, q.mod, false)
						if err != nil {
							b.Fatal(err)
						}
						if len(resp.GetDataPoints()) == 0 {
							b.Fatal("no answer")
						}
					}
					b.ReportMetric(float64(s.points)*float64(b.N)/b.Elapsed().Seconds(), "points/s")
				})
			}
		})
	}
}

func aggBenchMean(r *measurev1.QueryRequest) {
	r.GroupBy = &measurev1.QueryRequest_GroupBy{TagProjection: aggBenchTags("instance"), FieldName: "value"}
	r.Agg = &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN, FieldName: "value"}
	r.Limit = aggSeries
}

func aggBenchSumTop(r *measurev1.QueryRequest) {
	r.GroupBy = &measurev1.QueryRequest_GroupBy{TagProjection: aggBenchTags("svc"), FieldName: "value"}
	r.Agg = &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM, FieldName: "value"}
	r.Top = &measurev1.QueryRequest_Top{Number: 10, FieldName: "value"}
}

func aggBenchTags(tag string) *modelv1.TagProjection {
	return &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{tag}}}}
}

// aggBenchQuery runs one benchmark query over the whole time range; with
// trace, it asks for the execution trace too.
func aggBenchQuery(conn *grpc.ClientConn, group string, mod func(*measurev1.QueryRequest), trace bool) (*measurev1.QueryResponse, error) {
	req := &measurev1.QueryRequest{
		Groups: []string{group}, Name: aggMeasure, Trace: trace,
		TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-365 * 24 * time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
	}
	mod(req)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return measurev1.NewMeasureServiceClient(conn).Query(ctx, req)
}

// writeAggBench creates group with the benchmark measure and writes n
// points, a minute apart per series, over one stream.
func writeAggBench(tb testing.TB, conn *grpc.ClientConn, group string, n int) {
	tb.Helper()
	createAggBench(tb, conn, group)
	writeAggBenchPoints(tb, conn, group, n, aggSeries)
}

// createAggBench creates group with the benchmark measure.
func createAggBench(tb testing.TB, conn *grpc.ClientConn, group string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	year := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 3650}
	day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: group}, Catalog: commonv1.Catalog_CATALOG_MEASURE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 8, SegmentInterval: day, Ttl: year},
	}}); err != nil {
		tb.Fatalf("create group: %v", err)
	}
	if _, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: group, Name: aggMeasure},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "instance", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "svc", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields:   []*databasev1.FieldSpec{{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity:   &databasev1.Entity{TagNames: []string{"instance"}},
		Interval: "1m",
	}}); err != nil {
		tb.Fatalf("create measure: %v", err)
	}
}

// writeAggBenchPoints writes n points of the benchmark measure to group:
// series series (instance-i, of svc-(i mod aggServices)), each a point a
// minute up to baseTime, over one stream.
func writeAggBenchPoints(tb testing.TB, conn *grpc.ClientConn, group string, n, seriesNum int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ws, err := measurev1.NewMeasureServiceClient(conn).Write(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		acked := 0
		for {
			resp, err := ws.Recv()
			if errors.Is(err, io.EOF) {
				if acked != n {
					err = fmt.Errorf("%d of %d writes answered", acked, n)
				} else {
					err = nil
				}
				done <- err
				return
			}
			if err != nil {
				done <- err
				return
			}
			if resp.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
				done <- fmt.Errorf("write %d: %s", resp.GetMessageId(), resp.GetStatus())
				return
			}
			acked++
		}
	}()
	minutes := n / seriesNum
	for i := range n {
		series, minute := i%seriesNum, i/seriesNum
		req := &measurev1.WriteRequest{MessageId: uint64(i + 1), DataPoint: &measurev1.DataPointValue{
			Timestamp: timestamppb.New(baseTime.Add(-time.Duration(minutes-minute) * time.Minute)),
			TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{
				str("instance-" + strconv.Itoa(series)), str("svc-" + strconv.Itoa(series%aggServices)),
			}}},
			Fields: []*modelv1.FieldValue{{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: int64(i % 1000)}}}},
		}}
		if i == 0 {
			req.Metadata = &commonv1.Metadata{Group: group, Name: aggMeasure}
		}
		if err := ws.Send(req); err != nil {
			tb.Fatal(err)
		}
	}
	if err := ws.CloseSend(); err != nil {
		tb.Fatal(err)
	}
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
}
