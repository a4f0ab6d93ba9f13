package test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"

	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
)

// TestOAPDashboards reads, over OAP 10.4's schema and writes, what its
// dashboards ask BanyanDB, in the shapes its storage plugin sends, with
// the answers the widgets show: a metric's values by entity over a range
// (BanyanDBMetricsQueryDAO.readMetricsValues), the top-N widget both ways
// (BanyanDBAggregationQueryDAO: a measure query grouped by entity_id with
// MEAN and top/bottom N when no TopN rule fits, MeasureService/TopN on
// the bydb-topn.yml rule when one does), the alarm search with keywords
// (BanyanDBAlarmQueryDAO.getAlarm: MATCH on alarm_message, OAP's one
// MATCH over records; its log query sends no MATCH, the log content
// having no index) and the segment list ordered by duration
// (BanyanDBTraceQueryDAO.queryBasicTraces, order by the latency rule).
func TestOAPDashboards(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		runOAPDashboards(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		runOAPDashboards(t, c.liaisons[0])
	})
}

// dashboardValues are endpoint_cpm_minute's values of four endpoints of
// two services over three minutes: means 20, 5, 50 and 2.
var dashboardValues = []struct {
	entity, service string
	values          [3]int64
}{
	{"ep-0", "svc-a", [3]int64{10, 20, 30}},
	{"ep-1", "svc-a", [3]int64{5, 5, 5}},
	{"ep-2", "svc-b", [3]int64{100, 0, 50}},
	{"ep-3", "svc-b", [3]int64{1, 2, 3}},
}

func runOAPDashboards(t *testing.T, conn *grpc.ClientConn) {
	newOAPBoot(t, newOAPRegistries(conn)).install(oapTopNRules)
	if t.Failed() {
		return
	}
	m := oapMeasures()[0] // endpoint_cpm_minute
	fams := m.familyOf()
	first := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	var writes []*oapMeasureWrite
	for i, d := range dashboardValues {
		for j, v := range d.values {
			w := oapPoint(m, 0, i, first.Add(time.Duration(j)*time.Minute))
			w.tags[fams["entity_id"]]["entity_id"] = str(d.entity)
			w.tags[fams["service_id"]]["service_id"] = str(d.service)
			w.fields["value"] = &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: v}}}
			writes = append(writes, w)
		}
	}
	res, err := flushMeasures(conn, writes)
	checkFlush(t, "metrics flush", res, err, len(writes))
	if t.Failed() {
		return
	}
	rng := &modelv1.TimeRange{Begin: oapTimestamp(first), End: oapTimestamp(first.Add(2 * time.Minute))}
	t.Run("metric values by entity", func(t *testing.T) { checkMetricValues(t, conn, m, rng) })
	t.Run("top N by a measure query", func(t *testing.T) { checkDirectTopN(t, conn, m, rng) })
	t.Run("top N by a TopN rule", func(t *testing.T) { checkServerTopN(t, conn, m, rng) })
	t.Run("alarm search", func(t *testing.T) { checkAlarmSearch(t, conn) })
	t.Run("segment list by duration", func(t *testing.T) { checkSegmentsByDuration(t, conn) })
}

func entityEq(tag, v string) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
		Name: tag, Op: modelv1.Condition_BINARY_OP_EQ, Value: str(v), MatchOption: &modelv1.Condition_MatchOption{},
	}}}
}

// entityProjection is the projection OAP builds of the tag set
// {entity_id}: the tag in its family.
func entityProjection(m *oapModel) *modelv1.TagProjection {
	return &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: m.familyOf()["entity_id"], Tags: []string{"entity_id"}}}}
}

// pointsAsText renders points as entity=value, in order.
func pointsAsText(points []*measurev1.DataPoint) []string {
	var out []string
	for _, dp := range points {
		var entity string
		for _, f := range dp.GetTagFamilies() {
			for _, tag := range f.GetTags() {
				if tag.GetKey() == "entity_id" {
					entity = tag.GetValue().GetStr().GetValue()
				}
			}
		}
		for _, f := range dp.GetFields() {
			if f.GetName() == "value" {
				entity += "=" + strconv.FormatInt(f.GetValue().GetInt().GetValue(), 10)
			}
		}
		out = append(out, entity)
	}
	return out
}

// checkMetricValues is queryByEntityID: entity_id EQ, the tag and the
// value field projected, the duration's range; one point a minute.
func checkMetricValues(t *testing.T, conn *grpc.ClientConn, m *oapModel, rng *modelv1.TimeRange) {
	resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups: []string{m.group}, Name: m.name, TimeRange: rng,
		TagProjection:   entityProjection(m),
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"value"}},
		Criteria:        entityEq("entity_id", "ep-2"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pointsAsText(resp.GetDataPoints()), []string{"ep-2=100", "ep-2=0", "ep-2=50"}; !slices.Equal(got, want) {
		t.Errorf("ep-2's values %v, want %v (one a minute, in time order)", got, want)
	}
	for i, dp := range resp.GetDataPoints() {
		if want := rng.GetBegin().AsTime().Add(time.Duration(i) * time.Minute); !dp.GetTimestamp().AsTime().Equal(want) {
			t.Errorf("point %d at %v, want %v (OAP maps a point to its time bucket)", i, dp.GetTimestamp().AsTime(), want)
		}
	}
}

// checkDirectTopN is directMetricsTopN: meanBy(value, {entity_id}) and
// topN (DES) or bottomN (ASC), attributes as EQ conditions.
func checkDirectTopN(t *testing.T, conn *grpc.ClientConn, m *oapModel, rng *modelv1.TimeRange) {
	for _, tc := range []struct {
		what     string
		sort     modelv1.Sort
		n        int32
		criteria *modelv1.Criteria
		want     []string
	}{
		{"top 3", modelv1.Sort_SORT_DESC, 3, nil, []string{"ep-2=50", "ep-0=20", "ep-1=5"}},
		{"bottom 2 of svc-a", modelv1.Sort_SORT_ASC, 2, entityEq("service_id", "svc-a"), []string{"ep-1=5", "ep-0=20"}},
	} {
		resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
			Groups: []string{m.group}, Name: m.name, TimeRange: rng, Criteria: tc.criteria,
			TagProjection:   entityProjection(m),
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"value"}},
			GroupBy:         &measurev1.QueryRequest_GroupBy{TagProjection: entityProjection(m), FieldName: "value"},
			Agg:             &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN, FieldName: "value"},
			Top:             &measurev1.QueryRequest_Top{Number: tc.n, FieldName: "value", FieldValueSort: tc.sort},
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if got := pointsAsText(resp.GetDataPoints()); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, got, tc.want)
		}
	}
}

// checkServerTopN is serverSideTopN: the rule endpoint_cpm-service (group
// by service_id) fits a condition on service_id; MEAN, one list, each
// item's entity_id read from its tags.
func checkServerTopN(t *testing.T, conn *grpc.ClientConn, m *oapModel, rng *modelv1.TimeRange) {
	resp, err := measurev1.NewMeasureServiceClient(conn).TopN(ctxT(t), &measurev1.TopNRequest{
		Groups: []string{m.group}, Name: "endpoint_cpm-service", TimeRange: rng, TopN: 2,
		FieldValueSort: modelv1.Sort_SORT_DESC, Agg: modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN,
		Conditions: []*modelv1.Condition{{Name: "service_id", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("svc-b")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetLists()) != 1 {
		t.Fatalf("%d lists, want 1 (OAP fails on more)", len(resp.GetLists()))
	}
	var got []string
	for _, it := range resp.GetLists()[0].GetItems() {
		entity := ""
		for _, tag := range it.GetEntity() {
			if tag.GetKey() == "entity_id" {
				entity = tag.GetValue().GetStr().GetValue()
			}
		}
		got = append(got, fmt.Sprintf("%s=%d", entity, it.GetValue().GetInt().GetValue()))
	}
	if want := []string{"ep-2=50", "ep-3=2"}; !slices.Equal(got, want) {
		t.Errorf("TopN of svc-b: %v, want %v", got, want)
	}
}

// checkAlarmSearch is getAlarm with a keyword: MATCH on alarm_message
// (the simple analyzer OAP's @MatchQuery gives it), newest first, paged.
func checkAlarmSearch(t *testing.T, conn *grpc.ClientConn) {
	s := oapAlarmStream()
	start := time.Now().Add(-5 * time.Minute).Truncate(time.Millisecond)
	messages := []string{
		"Response time of service svc-a is more than 1000ms in 3 minutes of last 10 minutes.",
		"Successful rate of endpoint /orders is lower than 80% in 2 minutes of last 10 minutes",
		"Response time of endpoint /users is more than 1000ms in 3 minutes of last 10 minutes.",
		"Apdex of service svc-b is lower than 0.85 in 3 minutes of last 10 minutes.",
	}
	var writes []*oapStreamWrite
	for i, msg := range messages {
		w := oapAlarm(s, i, start.Add(time.Duration(i)*time.Second))
		w.tags[famSearchable]["alarm_message"] = str(msg)
		writes = append(writes, w)
	}
	res, err := flushStreams(conn, writes)
	checkFlush(t, "alarm flush", res, err, len(writes))
	if t.Failed() {
		return
	}
	for _, tc := range []struct {
		keyword       string
		offset, limit uint32
		want          []string
	}{
		{"response", 0, 20, []string{"alarm-002", "alarm-000"}},
		{"Lower", 0, 1, []string{"alarm-003"}},
		{"lower", 1, 1, []string{"alarm-001"}},
		{"latency", 0, 20, nil},
	} {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{s.group}, Name: s.name,
			TimeRange:  &modelv1.TimeRange{Begin: oapTimestamp(start.Add(-time.Minute)), End: oapTimestamp(start.Add(time.Minute))},
			Projection: s.projection(),
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: "alarm_message", Op: modelv1.Condition_BINARY_OP_MATCH, Value: str(tc.keyword), MatchOption: &modelv1.Condition_MatchOption{},
			}}},
			OrderBy: &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_DESC},
			Offset:  tc.offset, Limit: tc.limit,
		})
		if err != nil {
			t.Fatalf("keyword %q: %v", tc.keyword, err)
		}
		var got, want []string
		for _, el := range resp.GetElements() {
			got = append(got, el.GetElementId())
		}
		for _, id := range tc.want {
			want = append(want, elementid.Of(s.group, s.name, id))
		}
		if !slices.Equal(got, want) {
			t.Errorf("keyword %q offset %d limit %d: %v, want %v (%v)", tc.keyword, tc.offset, tc.limit, got, want, tc.want)
		}
	}
}

// checkSegmentsByDuration is queryBasicTraces with QueryOrder.BY_DURATION:
// a service's segments, order by the latency rule descending, paged.
func checkSegmentsByDuration(t *testing.T, conn *grpc.ClientConn) {
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	byTrace := oapTraceData(t, conn, oapTrace, 12, start)
	if t.Failed() {
		return
	}
	latency := func(w *oapTraceWrite) int64 { return w.tags["latency"].GetInt().GetValue() }
	svc1 := func(w *oapTraceWrite) bool { return w.tags["service_id"].GetStr().GetValue() == "svc-1" }
	for _, page := range []struct{ offset, limit int }{{0, 4}, {4, 4}} {
		resp, err := tracev1.NewTraceServiceClient(conn).Query(ctxT(t), &tracev1.QueryRequest{
			Groups: []string{oapTrace}, Name: "segment",
			TimeRange: &modelv1.TimeRange{Begin: oapTimestamp(start.Add(-time.Minute)), End: oapTimestamp(start.Add(time.Hour))},
			Criteria:  eqCond("service_id", strValue("svc-1")),
			OrderBy:   &modelv1.QueryOrder{IndexRuleName: "latency", Sort: modelv1.Sort_SORT_DESC},
			Offset:    uint32(page.offset), Limit: uint32(page.limit), TagProjection: []string{"service_id", "latency"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range resp.GetTraces() {
			got = append(got, tr.GetTraceId())
		}
		if want := expectTraces(byTrace, svc1, latency, true, page.offset, page.limit); !slices.Equal(got, want) {
			t.Errorf("page %+v: traces %v, want %v", page, got, want)
		}
	}
}
