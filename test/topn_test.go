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

// The data and answers of BanyanDB's topn test cases aggr_desc and
// condition_aggr_desc: service_instance_cpm_minute, entity (service_id,
// entity_id), two batches ten seconds apart, each a point a minute; the
// top-N aggregation groups by service_id and ranks value. (BanyanDB's data
// writes an empty service_id where this has svc_0, and reads it back as
// null.)
var instanceCPM = [][]struct {
	service, entity string
	value           int64
}{
	{{"svc_1", "entity_1", 1}, {"svc_2", "entity_2", 2}, {"svc_1", "entity_2", 3}, {"svc_2", "entity_3", 5}, {"svc_0", "entity_1", 4}, {"svc_1", "entity_1", 6}},
	{{"svc_0", "entity_2", 10}, {"svc_1", "entity_2", 9}, {"svc_4", "entity_2", 8}, {"svc_1", "entity_3", 11}, {"svc_2", "entity_1", 12}, {"svc_0", "entity_1", 7}},
}

const topNName = "service_instance_cpm_minute_top_bottom_100"

func TestMeasureTopN(t *testing.T) {
	for _, pre := range []bool{false, true} {
		name := map[bool]string{false: "query time", true: "pre-aggregated"}[pre]
		t.Run("standalone/"+name, func(t *testing.T) {
			conn, _ := startStandaloneWith(t, t.TempDir(), pre)
			createInstanceCPM(t, conn)
			checkTopN(t, conn, pre)
		})
		t.Run("cluster/"+name, func(t *testing.T) {
			c := startClusterWith(t, 2, 1, pre)
			createInstanceCPM(t, c.liaisons[0])
			if pre {
				waitTopNPre(t, c.liaisons[0], cpmGroup, "service_instance_cpm_minute", topNName, baseTime.Add(-3*time.Hour))
			}
			checkTopN(t, c.liaisons[0], pre)
		})
	}
}

// checkTopN asks the topn cases; pre: the answer is from rankings, whose
// lists without agg are a window each (here two points a window).
func checkTopN(t *testing.T, conn *grpc.ClientConn, pre bool) {
	writeInstanceCPM(t, conn)
	topN := func(mod func(*measurev1.TopNRequest)) (*measurev1.TopNResponse, error) {
		req := &measurev1.TopNRequest{
			Groups: []string{cpmGroup}, Name: topNName, TopN: 3,
			TimeRange:      &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
			FieldValueSort: modelv1.Sort_SORT_DESC, Agg: modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX,
		}
		mod(req)
		return measurev1.NewMeasureServiceClient(conn).TopN(ctxT(t), req)
	}
	item := func(service, entity string, v int64) *measurev1.TopNList_Item {
		return &measurev1.TopNList_Item{
			Entity: []*modelv1.Tag{{Key: "service_id", Value: str(service)}, {Key: "entity_id", Value: str(entity)}},
			Value:  &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: v}}},
		}
	}
	for _, c := range []struct {
		name string
		mod  func(*measurev1.TopNRequest)
		want *measurev1.TopNResponse
	}{
		{"max top 3 desc", func(*measurev1.TopNRequest) {}, &measurev1.TopNResponse{Lists: []*measurev1.TopNList{{Items: []*measurev1.TopNList_Item{
			item("svc_2", "entity_1", 12), item("svc_1", "entity_3", 11), item("svc_0", "entity_2", 10),
		}}}}},
		{"max top 1 where service_id = svc_1", func(r *measurev1.TopNRequest) {
			r.TopN = 1
			r.Conditions = []*modelv1.Condition{{Name: "service_id", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("svc_1")}}
		}, &measurev1.TopNResponse{Lists: []*measurev1.TopNList{{Items: []*measurev1.TopNList_Item{item("svc_1", "entity_3", 11)}}}}},
		{"min bottom 2", func(r *measurev1.TopNRequest) {
			r.TopN, r.FieldValueSort, r.Agg = 2, modelv1.Sort_SORT_ASC, modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN
		}, &measurev1.TopNResponse{Lists: []*measurev1.TopNList{{Items: []*measurev1.TopNList_Item{
			item("svc_1", "entity_1", 1), item("svc_2", "entity_2", 2),
		}}}}},
	} {
		resp, err := topN(c.mod)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !proto.Equal(resp, c.want) {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, prototext.Format(resp), prototext.Format(c.want))
		}
	}

	// Without agg: a ranking per point in time, each of the one point there.
	resp, err := topN(func(r *measurev1.TopNRequest) { r.Agg = modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED })
	if err != nil {
		t.Fatal(err)
	}
	lists, items := 12, 1 // one per point in time
	if pre {
		lists, items = 6, 2 // one per minute window
	}
	if n := len(resp.GetLists()); n != lists {
		t.Fatalf("%d lists without agg, want %d", n, lists)
	}
	for i, l := range resp.GetLists() {
		if len(l.GetItems()) != items || l.GetTimestamp() == nil || (i > 0 && !resp.GetLists()[i-1].GetTimestamp().AsTime().Before(l.GetTimestamp().AsTime())) {
			t.Fatalf("list %d: %s", i, prototext.Format(l))
		}
	}

	for name, c := range map[string]struct {
		mod  func(*measurev1.TopNRequest)
		code codes.Code
	}{
		"an unknown aggregation": {func(r *measurev1.TopNRequest) { r.Name = "nope" }, codes.NotFound},
		"top 0":                  {func(r *measurev1.TopNRequest) { r.TopN = 0 }, codes.InvalidArgument},
		"top 1,000,000":          {func(r *measurev1.TopNRequest) { r.TopN = 1_000_000 }, codes.InvalidArgument},
		"a condition on a tag it does not group by": {func(r *measurev1.TopNRequest) {
			r.Conditions = []*modelv1.Condition{{Name: "entity_id", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("entity_1")}}
		}, codes.InvalidArgument},
		"no time range": {func(r *measurev1.TopNRequest) { r.TimeRange = nil }, codes.InvalidArgument},
	} {
		if _, err := topN(c.mod); status.Code(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}

// createInstanceCPM creates the measure and its top-N aggregation.
func createInstanceCPM(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx := ctxT(t)
	day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: cpmGroup}, Catalog: commonv1.Catalog_CATALOG_MEASURE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 2, SegmentInterval: day, Ttl: day},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	const name = "service_instance_cpm_minute"
	if _, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: cpmGroup, Name: name},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "entity_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "service_id", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields:   []*databasev1.FieldSpec{{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity:   &databasev1.Entity{TagNames: []string{"service_id", "entity_id"}},
		Interval: "1m",
	}}); err != nil {
		t.Fatalf("create measure: %v", err)
	}
	if _, err := databasev1.NewTopNAggregationRegistryServiceClient(conn).Create(ctx, &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: &databasev1.TopNAggregation{
		Metadata:        &commonv1.Metadata{Group: cpmGroup, Name: topNName},
		SourceMeasure:   &commonv1.Metadata{Group: cpmGroup, Name: name},
		FieldName:       "value",
		GroupByTagNames: []string{"service_id"},
		CountersNumber:  1000, LruSize: 10,
	}}); err != nil {
		t.Fatalf("create top-N aggregation: %v", err)
	}
}

// writeInstanceCPM writes instanceCPM.
func writeInstanceCPM(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	const name = "service_instance_cpm_minute"
	var reqs []*measurev1.WriteRequest
	id := uint64(0)
	for b, batch := range instanceCPM {
		for i, p := range batch {
			id++
			req := &measurev1.WriteRequest{MessageId: id, DataPoint: &measurev1.DataPointValue{
				Timestamp:   timestamppb.New(baseTime.Add(time.Duration(b)*10*time.Second - time.Duration(len(batch)-i-1)*time.Minute)),
				TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{str(p.entity), str(p.service)}}},
				Fields:      []*modelv1.FieldValue{{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: p.value}}}},
			}}
			if id == 1 {
				req.Metadata = &commonv1.Metadata{Group: cpmGroup, Name: name}
			}
			reqs = append(reqs, req)
		}
	}
	writeMeasuresOK(t, conn, reqs)
}
