package test

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// The data and answers of BanyanDB's measure test cases group_max,
// group_min, group_sum, group_count, group_mean, group_no_field, top and
// bottom (service_cpm_minute: six points a minute apart, tags id and
// entity_id, fields total and value), and an aggregation of a float field
// without group_by like its float_agg_min.
var cpmPoints = []struct {
	id, entity   string
	total, value int64
	latency      float64
}{
	{"svc1", "entity_1", 100, 1, 18.1},
	{"svc1", "entity_2", 100, 2, 19.5},
	{"svc1", "entity_3", 100, 3, 20.25},
	{"svc2", "entity_4", 100, 5, 31},
	{"svc2", "entity_5", 50, 4, 18.2},
	{"svc3", "entity_6", 300, 6, 40},
}

const (
	cpmGroup = "sw_metric"
	cpmName  = "service_cpm_minute"
)

func TestMeasureGroupByAggregationAndTop(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		checkAggregations(t, conn, 0)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		checkAggregations(t, c.liaisons[0], 1) // every point on two nodes: copies must not count twice
	})
}

func checkAggregations(t *testing.T, conn *grpc.ClientConn, replicas uint32) {
	writeCPM(t, conn, replicas)
	idOnly := &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"id"}}}}
	query := func(mod func(*measurev1.QueryRequest)) (*measurev1.QueryResponse, error) {
		req := &measurev1.QueryRequest{
			Groups: []string{cpmGroup}, Name: cpmName,
			TimeRange:       &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
			TagProjection:   idOnly,
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"total", "value"}},
		}
		mod(req)
		return measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), req)
	}
	groupBy := &measurev1.QueryRequest_GroupBy{TagProjection: idOnly, FieldName: "value"}
	agg := func(f modelv1.AggregationFunction) func(*measurev1.QueryRequest) {
		return func(r *measurev1.QueryRequest) {
			r.GroupBy = groupBy
			r.Agg = &measurev1.QueryRequest_Aggregation{Function: f, FieldName: "value"}
		}
	}
	want := func(pairs ...any) []*measurev1.DataPoint {
		var out []*measurev1.DataPoint
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, &measurev1.DataPoint{
				TagFamilies: []*modelv1.TagFamily{{Name: "default", Tags: []*modelv1.Tag{{Key: "id", Value: str(pairs[i].(string))}}}},
				Fields:      []*measurev1.DataPoint_Field{{Name: "value", Value: &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: int64(pairs[i+1].(int))}}}}},
			})
		}
		return out
	}
	for _, c := range []struct {
		name string
		mod  func(*measurev1.QueryRequest)
		want []*measurev1.DataPoint
	}{
		{"group max", agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX), want("svc1", 3, "svc2", 5, "svc3", 6)},
		{"group min", agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN), want("svc1", 1, "svc2", 4, "svc3", 6)},
		{"group sum", agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM), want("svc1", 6, "svc2", 9, "svc3", 6)},
		{"group count", agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_COUNT), want("svc1", 3, "svc2", 2, "svc3", 1)},
		{"group mean", agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN), want("svc1", 2, "svc2", 4, "svc3", 6)},
		{"top 2", func(r *measurev1.QueryRequest) {
			agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN)(r)
			r.Top = &measurev1.QueryRequest_Top{Number: 2, FieldName: "value", FieldValueSort: modelv1.Sort_SORT_DESC}
		}, want("svc3", 6, "svc2", 4)},
		{"bottom 2", func(r *measurev1.QueryRequest) {
			agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN)(r)
			r.Top = &measurev1.QueryRequest_Top{Number: 2, FieldName: "value", FieldValueSort: modelv1.Sort_SORT_ASC}
		}, want("svc1", 2, "svc2", 4)},
		{"group max, limit 1 offset 1", func(r *measurev1.QueryRequest) {
			agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX)(r)
			r.Offset, r.Limit = 1, 1
		}, want("svc2", 5)},
	} {
		resp, err := query(c.mod)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !proto.Equal(&measurev1.QueryResponse{DataPoints: c.want}, resp) {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, prototext.Format(resp), prototext.Format(&measurev1.QueryResponse{DataPoints: c.want}))
		}
	}

	// Group by without agg: the first point of each group, whole.
	resp, err := query(func(r *measurev1.QueryRequest) { r.GroupBy = groupBy; r.FieldProjection = nil })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, dp := range resp.GetDataPoints() {
		got = append(got, dp.GetTagFamilies()[0].GetTags()[0].GetValue().GetStr().GetValue()+"@"+dp.GetTimestamp().AsTime().Sub(baseTime).String())
	}
	if want := []string{"svc1@-5m0s", "svc2@-2m0s", "svc3@0s"}; !equalStrings(got, want) {
		t.Errorf("group without agg: %v, want %v", got, want)
	}

	// A float field aggregated over every point: a float, with the first
	// point's projected tags.
	resp, err = query(func(r *measurev1.QueryRequest) {
		r.TagProjection = &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"id", "entity_id"}}}}
		r.Agg = &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN, FieldName: "latency"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if dps := resp.GetDataPoints(); len(dps) != 1 || dps[0].GetFields()[0].GetValue().GetFloat().GetValue() != 18.1 ||
		dps[0].GetTagFamilies()[0].GetTags()[1].GetValue().GetStr().GetValue() != "entity_1" {
		t.Errorf("float min over all points: %s", prototext.Format(resp))
	}

	// Ordered by an index rule's tag (id, descending; ties by time,
	// descending too), the tag cut from the answer when not projected.
	ctx := ctxT(t)
	if _, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: cpmGroup, Name: "by_id"}, Tags: []string{"id"}, Type: databasev1.IndexRule_TYPE_INVERTED,
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: &databasev1.IndexRuleBinding{
		Metadata: &commonv1.Metadata{Group: cpmGroup, Name: "cpm"}, Rules: []string{"by_id"},
		Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_MEASURE, Name: cpmName},
		BeginAt: timestamppb.New(baseTime.Add(-time.Hour)), ExpireAt: timestamppb.New(baseTime.Add(24 * 365 * time.Hour)),
	}}); err != nil {
		t.Fatal(err)
	}
	resp, err = query(func(r *measurev1.QueryRequest) {
		r.TagProjection = &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"entity_id"}}}}
		r.OrderBy = &modelv1.QueryOrder{IndexRuleName: "by_id", Sort: modelv1.Sort_SORT_DESC}
		r.Limit = 4
	})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, dp := range resp.GetDataPoints() {
		tags := dp.GetTagFamilies()[0].GetTags()
		if len(tags) != 1 {
			t.Fatalf("ordered by id, projecting entity_id: tags %v", tags)
		}
		got = append(got, tags[0].GetValue().GetStr().GetValue())
	}
	if want := []string{"entity_6", "entity_5", "entity_4", "entity_3"}; !equalStrings(got, want) {
		t.Errorf("ordered by id desc: %v, want %v", got, want)
	}

	// Bad input: each a clear InvalidArgument.
	for name, mod := range map[string]func(*measurev1.QueryRequest){
		"agg on a string field": func(r *measurev1.QueryRequest) {
			r.Agg = &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM, FieldName: "note"}
		},
		"agg on an unknown field": func(r *measurev1.QueryRequest) {
			r.Agg = &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM, FieldName: "nope"}
		},
		"agg without a function": func(r *measurev1.QueryRequest) {
			r.Agg = &measurev1.QueryRequest_Aggregation{FieldName: "value"}
		},
		"group by an unknown tag": func(r *measurev1.QueryRequest) {
			r.GroupBy = &measurev1.QueryRequest_GroupBy{TagProjection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"nope"}}}}}
		},
		"top 0": func(r *measurev1.QueryRequest) { r.Top = &measurev1.QueryRequest_Top{Number: 0, FieldName: "value"} },
		"top 1,000,000": func(r *measurev1.QueryRequest) {
			r.Top = &measurev1.QueryRequest_Top{Number: 1_000_000, FieldName: "value"}
		},
		"order by a rule the group lacks": func(r *measurev1.QueryRequest) {
			r.OrderBy = &modelv1.QueryOrder{IndexRuleName: "nope"}
		},
		"top by another field than the aggregate": func(r *measurev1.QueryRequest) {
			agg(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX)(r)
			r.Top = &measurev1.QueryRequest_Top{Number: 2, FieldName: "total"}
		},
	} {
		if _, err := query(mod); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeCPM creates the group and measure and writes cpmPoints a minute
// apart, the last at baseTime.
func writeCPM(t *testing.T, conn *grpc.ClientConn, replicas uint32) {
	t.Helper()
	ctx := ctxT(t)
	day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: cpmGroup}, Catalog: commonv1.Catalog_CATALOG_MEASURE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 2, Replicas: replicas, SegmentInterval: day, Ttl: day},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	if _, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: cpmGroup, Name: cpmName},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "entity_id", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields: []*databasev1.FieldSpec{
			{Name: "total", FieldType: databasev1.FieldType_FIELD_TYPE_INT},
			{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT},
			{Name: "latency", FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
			{Name: "note", FieldType: databasev1.FieldType_FIELD_TYPE_STRING},
		},
		Entity:   &databasev1.Entity{TagNames: []string{"entity_id"}},
		Interval: "1m",
	}}); err != nil {
		t.Fatalf("create measure: %v", err)
	}
	var reqs []*measurev1.WriteRequest
	for i, p := range cpmPoints {
		req := &measurev1.WriteRequest{MessageId: uint64(i + 1), DataPoint: &measurev1.DataPointValue{
			Timestamp:   timestamppb.New(baseTime.Add(-time.Duration(len(cpmPoints)-i-1) * time.Minute)),
			TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{str(p.id), str(p.entity)}}},
			Fields: []*modelv1.FieldValue{
				{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: p.total}}},
				{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: p.value}}},
				{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: p.latency}}},
				{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: "n"}}},
			},
		}}
		if i == 0 {
			req.Metadata = &commonv1.Metadata{Group: cpmGroup, Name: cpmName}
		}
		reqs = append(reqs, req)
	}
	writeMeasuresOK(t, conn, reqs)
}
