package test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

const (
	preGroup   = "topn_pre"
	preMeasure = "service_instance_resp_time"
)

// prePoint is one write of the pre-aggregation data.
type prePoint struct {
	service, entity, layer string
	window                 int // minutes after baseTime
	value                  int64
}

// createPreSchema creates preMeasure (interval 1m) and its aggregations.
func createPreSchema(t *testing.T, conn *grpc.ClientConn, shards uint32, aggs ...*databasev1.TopNAggregation) {
	t.Helper()
	ctx := ctxT(t)
	day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: preGroup}, Catalog: commonv1.Catalog_CATALOG_MEASURE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards, SegmentInterval: day, Ttl: day},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	if _, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: preGroup, Name: preMeasure},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "entity_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "service_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "layer", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields:   []*databasev1.FieldSpec{{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity:   &databasev1.Entity{TagNames: []string{"service_id", "entity_id"}},
		Interval: "1m",
	}}); err != nil {
		t.Fatalf("create measure: %v", err)
	}
	for _, a := range aggs {
		a.Metadata = &commonv1.Metadata{Group: preGroup, Name: a.GetMetadata().GetName()}
		a.SourceMeasure = &commonv1.Metadata{Group: preGroup, Name: preMeasure}
		a.FieldName = "value"
		if _, err := databasev1.NewTopNAggregationRegistryServiceClient(conn).Create(ctx,
			&databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: a}); err != nil {
			t.Fatalf("create top-N aggregation: %v", err)
		}
	}
}

// writePre writes points in order, each acknowledged, versioned by
// their message ids (from 1).
func writePre(t *testing.T, conn *grpc.ClientConn, points []prePoint) {
	t.Helper()
	writePreFrom(t, conn, points, 1)
}

// writePreFrom is writePre, the message ids from id.
func writePreFrom(t *testing.T, conn *grpc.ClientConn, points []prePoint, id uint64) {
	t.Helper()
	var reqs []*measurev1.WriteRequest
	for i, p := range points {
		req := &measurev1.WriteRequest{MessageId: id + uint64(i), DataPoint: &measurev1.DataPointValue{
			Timestamp:   timestamppb.New(baseTime.Add(time.Duration(p.window) * time.Minute)),
			TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{str(p.entity), str(p.service), str(p.layer)}}},
			Fields:      []*modelv1.FieldValue{{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: p.value}}}},
		}}
		if i == 0 {
			req.Metadata = &commonv1.Metadata{Group: preGroup, Name: preMeasure}
		}
		reqs = append(reqs, req)
	}
	writeMeasuresOK(t, conn, reqs)
}

// preData is 30 series (5 services of 6 instances, half of them layer
// GENERAL) over 6 one-minute windows, each value distinct, then a second
// write of every third series in window 2.
func preData() (first, overwrites []prePoint) {
	for w := range 6 {
		for s := range 30 {
			layer := "GENERAL"
			if s%2 == 1 {
				layer = "MQ"
			}
			first = append(first, prePoint{fmt.Sprintf("svc_%d", s%5), fmt.Sprintf("inst_%d", s), layer, w, int64(s*1000 + w*7 + (s*37)%11)})
		}
	}
	for _, p := range first {
		var s int
		_, _ = fmt.Sscanf(p.entity, "inst_%d", &s)
		if p.window == 2 && s%3 == 0 {
			p.value += 500 + int64(s)
			overwrites = append(overwrites, p)
		}
	}
	return first, overwrites
}

func preAggs() []*databasev1.TopNAggregation {
	return []*databasev1.TopNAggregation{
		{Metadata: &commonv1.Metadata{Name: "by_service_desc"}, GroupByTagNames: []string{"service_id"},
			FieldValueSort: modelv1.Sort_SORT_DESC, CountersNumber: 1000, LruSize: 10},
		{Metadata: &commonv1.Metadata{Name: "general_asc"}, GroupByTagNames: []string{"service_id"},
			FieldValueSort: modelv1.Sort_SORT_ASC, CountersNumber: 1000, LruSize: 2,
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: "layer", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("GENERAL")}}}},
		{Metadata: &commonv1.Metadata{Name: "both_ways"}, CountersNumber: 1000, LruSize: 10},
	}
}

// preRequests are TopN requests over the whole data, every aggregation,
// function, direction and condition form.
func preRequests() map[string]*measurev1.TopNRequest {
	out := map[string]*measurev1.TopNRequest{}
	tr := &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Minute)), End: timestamppb.New(baseTime.Add(time.Hour))}
	conds := map[string][]*modelv1.Condition{
		"":                  nil,
		" where svc_1":      {{Name: "service_id", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("svc_1")}},
		" where in svc_2,4": {{Name: "service_id", Op: modelv1.Condition_BINARY_OP_IN, Value: &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"svc_2", "svc_4"}}}}}},
		" where not svc_0":  {{Name: "service_id", Op: modelv1.Condition_BINARY_OP_NE, Value: str("svc_0")}},
	}
	for _, agg := range []struct {
		name  string
		sorts []modelv1.Sort
	}{
		{"by_service_desc", []modelv1.Sort{modelv1.Sort_SORT_UNSPECIFIED, modelv1.Sort_SORT_DESC}},
		{"general_asc", []modelv1.Sort{modelv1.Sort_SORT_ASC}},
		{"both_ways", []modelv1.Sort{modelv1.Sort_SORT_ASC, modelv1.Sort_SORT_DESC}},
	} {
		for cname, c := range conds {
			if agg.name == "both_ways" && c != nil {
				continue // it groups by nothing: no condition applies
			}
			for _, sort := range agg.sorts {
				for _, fn := range []modelv1.AggregationFunction{
					modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED, modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM,
					modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX, modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN,
					modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN,
				} {
					out[fmt.Sprintf("%s %v %v%s", agg.name, sort, fn, cname)] = &measurev1.TopNRequest{
						Groups: []string{preGroup}, Name: agg.name, TimeRange: tr, TopN: 5,
						FieldValueSort: sort, Agg: fn, Conditions: c,
					}
				}
			}
		}
	}
	return out
}

// The rankings kept at write time answer as the points do when every
// series of a window fits its counters_number: overwrites of a series in a
// window, the aggregation's criteria, group-by conditions, both
// directions, with and without agg over several windows; standalone and a
// cluster (two data nodes, the shards split between them).
func TestTopNPreAggregatedMatchesQueryTime(t *testing.T) {
	first, overwrites := preData()
	queryConn, _ := startStandaloneWith(t, t.TempDir(), false)
	standalone, _ := startStandaloneWith(t, t.TempDir(), true)
	cluster := startClusterWith(t, 2, 1, true)
	for _, conn := range []*grpc.ClientConn{queryConn, standalone, cluster.liaisons[0]} {
		createPreSchema(t, conn, 2, preAggs()...)
		if conn == cluster.liaisons[0] {
			waitTopNPre(t, conn, preGroup, preMeasure, "both_ways", baseTime.Add(-3*time.Hour))
		}
		writePre(t, conn, first)
		writePreFrom(t, conn, overwrites, 1000)
	}
	reqs := preRequests()
	for name, req := range reqs {
		want, err := measurev1.NewMeasureServiceClient(queryConn).TopN(ctxT(t), req)
		if err != nil {
			t.Fatalf("%s: query time: %v", name, err)
		}
		if len(want.GetLists()) == 0 {
			t.Fatalf("%s: query time answers nothing", name)
		}
		for where, conn := range map[string]*grpc.ClientConn{"standalone": standalone, "cluster": cluster.liaisons[0]} {
			got, err := measurev1.NewMeasureServiceClient(conn).TopN(ctxT(t), req)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, where, err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("%s: %s pre-aggregated:\n%s\nquery time:\n%s", name, where, prototext.Format(got), prototext.Format(want))
			}
		}
	}
}

// A restart loses no ranking: each is stored in the commit of the writes
// it counts, and the first write to a window after the restart reads the
// window's ranking back (here window 3 is half written before the
// restart, and window 2's overwrites come after it).
func TestTopNPreAggregatedSurvivesRestart(t *testing.T) {
	first, overwrites := preData()
	queryConn, _ := startStandaloneWith(t, t.TempDir(), false)
	createPreSchema(t, queryConn, 2, preAggs()...)
	writePre(t, queryConn, first[:105]) // the same writes: the same versions
	writePre(t, queryConn, first[105:])
	writePreFrom(t, queryConn, overwrites, 1000)

	dir := t.TempDir()
	conn, r := startStandaloneWith(t, dir, true)
	createPreSchema(t, conn, 2, preAggs()...)
	writePre(t, conn, first[:105])
	r.stop(t)
	conn, _ = startStandaloneWith(t, dir, true)
	writePre(t, conn, first[105:])
	writePreFrom(t, conn, overwrites, 1000)

	for name, req := range preRequests() {
		want, err := measurev1.NewMeasureServiceClient(queryConn).TopN(ctxT(t), req)
		if err != nil {
			t.Fatalf("%s: query time: %v", name, err)
		}
		got, err := measurev1.NewMeasureServiceClient(conn).TopN(ctxT(t), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: pre-aggregated after a restart:\n%s\nquery time:\n%s", name, prototext.Format(got), prototext.Format(want))
		}
	}
}

// Where the two answers differ: a ranking keeps counters_number series a
// window. inst_c is third in each of three windows, so no window's
// ranking of two holds it, yet its sum over them is the highest; and in
// window 3, inst_x, first, is overwritten below inst_z, which the ranking
// already let go of.
func TestTopNPreAggregatedIsBoundedByCounters(t *testing.T) {
	points := []prePoint{
		{"svc", "inst_a", "GENERAL", 0, 10}, {"svc", "inst_b", "GENERAL", 0, 9}, {"svc", "inst_c", "GENERAL", 0, 8},
		{"svc", "inst_d", "GENERAL", 1, 10}, {"svc", "inst_e", "GENERAL", 1, 9}, {"svc", "inst_c", "GENERAL", 1, 8},
		{"svc", "inst_f", "GENERAL", 2, 10}, {"svc", "inst_g", "GENERAL", 2, 9}, {"svc", "inst_c", "GENERAL", 2, 8},
		{"svc", "inst_x", "GENERAL", 3, 5}, {"svc", "inst_y", "GENERAL", 3, 4}, {"svc", "inst_z", "GENERAL", 3, 3},
	}
	overwrite := []prePoint{{"svc", "inst_x", "GENERAL", 3, 1}}
	agg := &databasev1.TopNAggregation{Metadata: &commonv1.Metadata{Name: "two"}, FieldValueSort: modelv1.Sort_SORT_DESC, CountersNumber: 2, LruSize: 10}
	answers := map[bool]*grpc.ClientConn{}
	for _, pre := range []bool{false, true} {
		conn, _ := startStandaloneWith(t, t.TempDir(), pre)
		createPreSchema(t, conn, 1, proto.CloneOf(agg))
		writePre(t, conn, points)
		writePreFrom(t, conn, overwrite, 100) // a higher version: it replaces inst_x's point
		answers[pre] = conn
	}
	ask := func(pre bool, fn modelv1.AggregationFunction, begin, end time.Duration) []string {
		resp, err := measurev1.NewMeasureServiceClient(answers[pre]).TopN(ctxT(t), &measurev1.TopNRequest{
			Groups: []string{preGroup}, Name: "two", TopN: 2, Agg: fn,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(begin)), End: timestamppb.New(baseTime.Add(end))},
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range resp.GetLists() {
			for _, it := range l.GetItems() {
				out = append(out, fmt.Sprintf("%s=%d", it.GetEntity()[1].GetValue().GetStr().GetValue(), it.GetValue().GetInt().GetValue()))
			}
		}
		return out
	}
	sum := modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM
	if got, want := fmt.Sprint(ask(false, sum, 0, 3*time.Minute)), "[inst_c=24 inst_a=10]"; got != want {
		t.Errorf("query time, sum over windows 0-2: %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ask(true, sum, 0, 3*time.Minute)), "[inst_a=10 inst_d=10]"; got != want {
		t.Errorf("pre-aggregated, sum over windows 0-2: %s, want %s", got, want)
	}
	none := modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED
	if got, want := fmt.Sprint(ask(false, none, 3*time.Minute, 4*time.Minute)), "[inst_y=4 inst_z=3]"; got != want {
		t.Errorf("query time, window 3: %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ask(true, none, 3*time.Minute, 4*time.Minute)), "[inst_y=4 inst_x=1]"; got != want {
		t.Errorf("pre-aggregated, window 3: %s, want %s", got, want)
	}
}

// waitTopNPre waits until every data node counts the writes of measure
// into aggregation agg (a cluster's data nodes learn of a new aggregation
// from the registry a moment after the liaison; the writes before are not
// counted): it writes probe points at at (tags: a probe name and
// "probe") until the aggregation's ranking of that window holds them all.
func waitTopNPre(t testing.TB, conn *grpc.ClientConn, group, measure, agg string, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for id := uint64(1); ; id++ {
		ws, err := measurev1.NewMeasureServiceClient(conn).Write(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		const probes = 8
		for i := range probes {
			req := &measurev1.WriteRequest{MessageId: id*probes + uint64(i), DataPoint: &measurev1.DataPointValue{
				Timestamp:   timestamppb.New(at),
				TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{str(fmt.Sprintf("probe_%d", i)), str("probe")}}},
				Fields:      []*modelv1.FieldValue{{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: int64(i)}}}},
			}}
			if i == 0 {
				req.Metadata = &commonv1.Metadata{Group: group, Name: measure}
			}
			if err := ws.Send(req); err != nil {
				t.Fatal(err)
			}
		}
		if err := ws.CloseSend(); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := ws.Recv(); err != nil {
				break
			}
		}
		resp, err := measurev1.NewMeasureServiceClient(conn).TopN(ctxT(t), &measurev1.TopNRequest{
			Groups: []string{group}, Name: agg, TopN: 100,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(at), End: timestamppb.New(at.Add(time.Minute))},
		})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range resp.GetLists() {
			n += len(l.GetItems())
		}
		if n == probes {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the data nodes do not count writes into %s/%s: %d of %d probes ranked", group, agg, n, probes)
		}
	}
}
