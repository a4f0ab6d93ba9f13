package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/banyand-io/banyand/banyand/schema"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

func TestTimeRangeBoundaries(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	// Around a UTC midnight, which is also a segment boundary.
	midnight := time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC)
	at := map[string]time.Time{
		"before":   midnight.Add(-time.Nanosecond),
		"midnight": midnight,
		"after":    midnight.Add(time.Nanosecond),
		"later":    midnight.Add(time.Hour),
	}
	var es []elem
	for id, ts := range at {
		es = append(es, elem{service: "svc", instance: "i", id: id, ts: ts})
	}
	mustWriteStream(t, s, es)
	for _, tc := range []struct {
		begin, end time.Time
		want       []string
	}{
		// As in BanyanDB, a range holds both its ends.
		{midnight.Add(-time.Nanosecond), midnight.Add(time.Hour), []string{"before", "midnight", "after", "later"}},
		{midnight, midnight.Add(time.Hour - 1), []string{"midnight", "after"}},
		{midnight, midnight, []string{"midnight"}}, // one point in time
		{midnight.Add(-time.Hour), midnight, []string{"before", "midnight"}},
		{midnight, midnight.Add(-time.Nanosecond), nil}, // ends before it begins: nothing
		{midnight.Add(time.Nanosecond), midnight.Add(2 * time.Nanosecond), []string{"after"}},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), []string{"before", "midnight", "after", "later"}},
	} {
		got := ids(mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: timeRange(tc.begin, tc.end)}))
		if !slices.Equal(got, tc.want) {
			t.Errorf("[%v, %v]: %v, want %v", tc.begin, tc.end, got, tc.want)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	tr := timeRange(base, base.Add(time.Hour))
	for _, tc := range []struct {
		name          string
		req           *streamv1.QueryRequest
		unimplemented bool
		mention       string
	}{
		{"no time range", &streamv1.QueryRequest{}, false, "time range"},
		{"no end", &streamv1.QueryRequest{TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(base)}}, false, "time range"},
		{"unknown tag", &streamv1.QueryRequest{TimeRange: tr, Criteria: eq("nope", str("x"))}, false, "nope"},
		{"unknown projection", &streamv1.QueryRequest{TimeRange: tr, Projection: &modelv1.TagProjection{
			TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"code"}}},
		}}, false, "code"},
		{"match without an analyzer", &streamv1.QueryRequest{TimeRange: tr, Criteria: cond("service", modelv1.Condition_BINARY_OP_MATCH, str("x"))}, false, "analyzer"},
		{"match on an int tag", &streamv1.QueryRequest{TimeRange: tr, Criteria: matchCond("code", "simple", str("x"))}, false, "only string tags"},
		{"in with a scalar", &streamv1.QueryRequest{TimeRange: tr, Criteria: and(eq("service", str("a")), cond("code", modelv1.Condition_BINARY_OP_IN, intv(1)))}, false, "int_array"},
		{"having on a scalar tag", &streamv1.QueryRequest{TimeRange: tr, Criteria: cond("code", modelv1.Condition_BINARY_OP_HAVING, ints(1))}, false, "only array tags"},
		{"having a scalar", &streamv1.QueryRequest{TimeRange: tr, Criteria: cond("labels", modelv1.Condition_BINARY_OP_HAVING, str("a"))}, false, "str_array"},
		{"order by index without its tag", &streamv1.QueryRequest{TimeRange: tr, OrderBy: &modelv1.QueryOrder{IndexRuleName: "duration"}}, false, "without the tag"},
		{"range on array", &streamv1.QueryRequest{TimeRange: tr, Criteria: cond("ids", modelv1.Condition_BINARY_OP_LT, &modelv1.TagValue{
			Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{1}}},
		})}, true, "LT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.QueryStream(context.Background(), streamQuery(tc.req))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, queue.ErrInvalidMessage) {
				t.Errorf("%v does not wrap queue.ErrInvalidMessage", err)
			}
			if errors.Is(err, ErrUnimplemented) != tc.unimplemented || (tc.unimplemented && !strings.Contains(err.Error(), "unimplemented")) {
				t.Errorf("%v: unimplemented = %v, want %v", err, errors.Is(err, ErrUnimplemented), tc.unimplemented)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("%v does not mention %q", err, tc.mention)
			}
		})
	}
	for name, req := range map[string]*measurev1.QueryRequest{
		"group by": {TimeRange: tr, GroupBy: &measurev1.QueryRequest_GroupBy{FieldName: "total"}},
		"agg":      {TimeRange: tr, Agg: &measurev1.QueryRequest_Aggregation{FieldName: "total"}},
		"top":      {TimeRange: tr, Top: &measurev1.QueryRequest_Top{Number: 3, FieldName: "total"}},
	} {
		_, err := s.QueryMeasure(context.Background(), measureQuery(req))
		if !errors.Is(err, ErrUnimplemented) || !errors.Is(err, queue.ErrInvalidMessage) || !strings.Contains(err.Error(), "unimplemented") {
			t.Errorf("measure %s: %v, want unimplemented", name, err)
		}
	}
	if _, err := s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{
		TimeRange: tr, FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"nope"}},
	})); !errors.Is(err, queue.ErrInvalidMessage) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown field: %v", err)
	}
}

// fixture writes 4 services × 3 instances × 5 elements, one second apart
// and interleaved, spread over two days (two segments).
func fixture(t *testing.T, s *Store) []elem {
	t.Helper()
	es := fixtureElems()
	mustWriteStream(t, s, es)
	return es
}

// fixtureElems are 60 elements of 12 series, 20 minutes apart.
func fixtureElems() []elem {
	var es []elem
	n := 0
	for k := range 5 {
		for sv := range 4 {
			for in := range 3 {
				es = append(es, elem{
					service: fmt.Sprintf("svc-%d", sv), instance: fmt.Sprintf("inst-%d", in),
					id: fmt.Sprintf("e%03d", n), ts: base.Add(time.Duration(n) * 20 * time.Minute), code: int64(k*100 + sv),
				})
				n++
			}
		}
	}
	return es
}

func TestEntitySeekMatchesScan(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixture(t, s)
	tr := timeRange(base, es[len(es)-1].ts.Add(time.Nanosecond))
	for _, crit := range []*modelv1.Criteria{
		and(eq("service", str("svc-1")), eq("instance", str("inst-2"))),
		and(eq("instance", str("inst-0")), and(eq("code", intv(302)), eq("service", str("svc-2")))),
		and(and(eq("service", str("svc-3")), eq("instance", str("inst-1"))), or(eq("code", intv(3)), eq("code", intv(403)))),
		and(eq("service", str("svc-0")), eq("instance", str("nope"))),
	} {
		for _, desc := range []bool{false, true} {
			req := &streamv1.QueryRequest{TimeRange: tr, Criteria: crit, Limit: 100, Projection: allStreamTags()}
			if desc {
				req.OrderBy = &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_DESC}
			}
			q := streamQuery(req)
			layout := newTagLayout(q.GetSchema().GetTagFamilies())
			c, err := compileCriteria(crit, layout)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := seriesKey(testStream, q.GetSchema().GetEntity().GetTagNames(), c.eq); !ok {
				t.Fatalf("criteria %v do not fix the entity", crit)
			}
			seek, err := s.queryStream(context.Background(), q, false)
			if err != nil {
				t.Fatal(err)
			}
			scan, err := s.queryStream(context.Background(), q, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(scan, seek, protocmp.Transform()); diff != "" {
				t.Errorf("seek differs from scan (-scan +seek):\n%s", diff)
			}
			var want []string
			for _, e := range es {
				if c.match(e.value().GetTagFamilies()) {
					want = append(want, e.id)
				}
			}
			if desc {
				slices.Reverse(want)
			}
			if got := ids(seek.GetElements()); !slices.Equal(got, want) {
				t.Errorf("%v desc=%v: %v, want %v", crit, desc, got, want)
			}
		}
	}
}

type criteriaCase struct {
	name string
	crit *modelv1.Criteria
	want []string
}

// criteriaCases are conditions of every kind over fixture's elements es,
// with the ids they select.
func criteriaCases(es []elem) []criteriaCase {
	pick := func(f func(e elem) bool) []string {
		var out []string
		for _, e := range es {
			if f(e) {
				out = append(out, e.id)
			}
		}
		return out
	}
	return []criteriaCase{
		{"eq non-entity", eq("code", intv(201)), pick(func(e elem) bool { return e.code == 201 })},
		{"eq one entity tag", eq("instance", str("inst-1")), pick(func(e elem) bool { return e.instance == "inst-1" })},
		{"ne", and(eq("service", str("svc-0")), cond("instance", modelv1.Condition_BINARY_OP_NE, str("inst-0"))),
			pick(func(e elem) bool { return e.service == "svc-0" && e.instance != "inst-0" })},
		{"lt", cond("code", modelv1.Condition_BINARY_OP_LT, intv(100)), pick(func(e elem) bool { return e.code < 100 })},
		{"ge le", and(cond("code", modelv1.Condition_BINARY_OP_GE, intv(200)), cond("code", modelv1.Condition_BINARY_OP_LE, intv(301))),
			pick(func(e elem) bool { return e.code >= 200 && e.code <= 301 })},
		{"gt", cond("code", modelv1.Condition_BINARY_OP_GT, intv(402)), pick(func(e elem) bool { return e.code > 402 })},
		{"or", or(eq("service", str("svc-3")), eq("code", intv(0))), pick(func(e elem) bool { return e.service == "svc-3" || e.code == 0 })},
		{"array eq", eq("labels", &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"a", "e007"}}}}),
			[]string{"e007"}},
		{"binary eq", eq("blob", &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte("bin-e011")}}), []string{"e011"}},
		{"null eq", and(eq("opt", null()), eq("code", intv(1))), pick(func(e elem) bool { return e.code == 1 })},
		{"type mismatch", eq("code", str("201")), nil},
		{"in strings", cond("instance", modelv1.Condition_BINARY_OP_IN, strs("inst-1", "inst-2", "nope")),
			pick(func(e elem) bool { return e.instance == "inst-1" || e.instance == "inst-2" })},
		{"in ints", cond("code", modelv1.Condition_BINARY_OP_IN, ints(201, 0)), pick(func(e elem) bool { return e.code == 201 || e.code == 0 })},
		{"not in", and(eq("service", str("svc-0")), cond("code", modelv1.Condition_BINARY_OP_NOT_IN, ints(0, 1, 2))),
			pick(func(e elem) bool { return e.service == "svc-0" && e.code > 2 })},
		{"in of another type", cond("code", modelv1.Condition_BINARY_OP_IN, strs("201")), nil},
		// labels = [a, id], ids = [1, code]
		{"having one", cond("labels", modelv1.Condition_BINARY_OP_HAVING, strs("e007")), []string{"e007"}},
		{"having all", cond("labels", modelv1.Condition_BINARY_OP_HAVING, strs("a", "e007")), []string{"e007"}},
		{"having not all", cond("labels", modelv1.Condition_BINARY_OP_HAVING, strs("b", "e007")), nil},
		{"having ints", cond("ids", modelv1.Condition_BINARY_OP_HAVING, ints(1, 201)), pick(func(e elem) bool { return e.code == 201 })},
		{"not having", and(eq("service", str("svc-0")), cond("ids", modelv1.Condition_BINARY_OP_NOT_HAVING, ints(0))),
			pick(func(e elem) bool { return e.service == "svc-0" && e.code != 0 })},
		{"having of another type", cond("ids", modelv1.Condition_BINARY_OP_HAVING, strs("1")), nil},
		{"match", matchCond("instance", "simple", str("INST")), es2ids(es)},
		{"match and: every token", matchCondAnd("instance", "standard", str("inst 2")), pick(func(e elem) bool { return e.instance == "inst-2" })},
		{"match array: each item", matchCond("instance", "standard", strs("inst", "1")), pick(func(e elem) bool { return e.instance == "inst-1" })},
		{"match keyword", matchCond("instance", "keyword", str("inst")), nil},
	}
}

func TestCriteria(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixture(t, s)
	tr := timeRange(base, base.Add(72*time.Hour))
	for _, tc := range criteriaCases(es) {
		got := ids(mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: tr, Criteria: tc.crit, Limit: 1000}))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProjection(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	mustWriteStream(t, s, []elem{{service: "svc", instance: "i", id: "e", ts: base, code: 9}})
	got := mustQueryStream(t, s, &streamv1.QueryRequest{
		TimeRange: timeRange(base, base.Add(time.Second)),
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
			{Name: "searchable", Tags: []string{"opt", "code"}},
			{Name: "default", Tags: []string{"instance"}},
		}},
	})
	want := []*modelv1.TagFamily{
		{Name: "searchable", Tags: []*modelv1.Tag{{Key: "opt", Value: null()}, {Key: "code", Value: intv(9)}}},
		{Name: "default", Tags: []*modelv1.Tag{{Key: "instance", Value: str("i")}}},
	}
	if len(got) != 1 {
		t.Fatalf("got %d elements", len(got))
	}
	if diff := cmp.Diff(want, got[0].GetTagFamilies(), protocmp.Transform()); diff != "" {
		t.Errorf("tag families (-want +got):\n%s", diff)
	}
	// No projection: no tags.
	got = mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Second))})
	if len(got) != 1 || len(got[0].GetTagFamilies()) != 0 {
		t.Errorf("without projection: %v", got)
	}

	// A tag added to the schema after the write reads as null.
	q := streamQuery(&streamv1.QueryRequest{
		TimeRange: timeRange(base, base.Add(time.Second)),
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
			{Name: "searchable", Tags: []string{"added"}},
		}},
	})
	fam := q.GetSchema().GetTagFamilies()[1]
	fam.Tags = append(fam.Tags, &databasev1.TagSpec{Name: "added", Type: databasev1.TagType_TAG_TYPE_STRING})
	resp, err := s.QueryStream(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if v := resp.GetElements()[0].GetTagFamilies()[0].GetTags()[0].GetValue(); !isNull(v) {
		t.Errorf("added tag: %v, want null", v)
	}
}

func TestOrderAndLimit(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixture(t, s) // 60 elements over two segments
	all := make([]string, len(es))
	for i, e := range es {
		all[i] = e.id
	}
	rev := slices.Clone(all)
	slices.Reverse(rev)
	tr := timeRange(base, base.Add(72*time.Hour))
	for _, tc := range []struct {
		name          string
		order         *modelv1.QueryOrder
		offset, limit uint32
		want          []string
	}{
		{"default asc, default limit 20", nil, 0, 0, all[:schema.DefaultStreamLimit]},
		{"unspecified sort is asc", &modelv1.QueryOrder{}, 0, 5, all[:5]},
		{"asc", &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC}, 0, 7, all[:7]},
		{"desc", &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_DESC}, 0, 7, rev[:7]},
		{"offset is left to the liaison", nil, 10, 5, all[:15]},
		{"desc across segments", &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_DESC}, 30, 25, rev[:55]},
		{"more than stored", nil, 50, 50, all},
	} {
		got := ids(mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: tr, OrderBy: tc.order, Offset: tc.offset, Limit: tc.limit}))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	// Measures: default limit 100, desc order.
	var ps []point
	for i := range 150 {
		ps = append(ps, point{service: fmt.Sprintf("svc-%d", i%4), ts: base.Add(time.Duration(i) * time.Minute), total: int64(i)})
	}
	mustWriteMeasure(t, s, ps)
	resp, err := s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{
		TimeRange:       tr,
		OrderBy:         &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_DESC},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"total"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetDataPoints()) != schema.DefaultMeasureLimit {
		t.Fatalf("%d data points, want %d", len(resp.GetDataPoints()), schema.DefaultMeasureLimit)
	}
	for i, dp := range resp.GetDataPoints() {
		if got, want := dp.GetFields()[0].GetValue().GetInt().GetValue(), int64(149-i); got != want {
			t.Fatalf("point %d total %d, want %d", i, got, want)
		}
	}
	// Entity seek on a measure.
	resp, err = s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{
		TimeRange: tr, Criteria: eq("service", str("svc-2")), Limit: 3,
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"total"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	var totals []int64
	for _, dp := range resp.GetDataPoints() {
		totals = append(totals, dp.GetFields()[0].GetValue().GetInt().GetValue())
	}
	if want := []int64{2, 6, 10}; !slices.Equal(totals, want) {
		t.Errorf("svc-2 totals %v, want %v", totals, want)
	}
}

func TestQueryAcrossGroups(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	mustWriteStream(t, s, []elem{{service: "svc", instance: "i", id: "g1-a", ts: base}, {service: "svc", instance: "i", id: "g1-b", ts: base.Add(2 * time.Second)}})
	m := elem{service: "svc", instance: "i", id: "g2-a", ts: base.Add(time.Second)}
	msg := streamWriteIn(t, "g2", m)
	if errs := s.WriteStream(context.Background(), [][]byte{msg}); errs != nil {
		t.Fatal(errs)
	}
	got := ids(mustQueryStream(t, s, &streamv1.QueryRequest{Groups: []string{testGroup, "g2"}, TimeRange: timeRange(base, base.Add(time.Hour))}))
	if want := []string{"g1-a", "g2-a", "g1-b"}; !slices.Equal(got, want) {
		t.Errorf("two groups: %v, want %v", got, want)
	}
	got = ids(mustQueryStream(t, s, &streamv1.QueryRequest{Groups: []string{"g2"}, TimeRange: timeRange(base, base.Add(time.Hour))}))
	if want := []string{"g2-a"}; !slices.Equal(got, want) {
		t.Errorf("g2 only: %v, want %v", got, want)
	}
}

func strs(v ...string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: v}}}
}

func ints(v ...int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: v}}}
}

// Ordered by a tag's value (the tag of the index rule the query names,
// which the liaison resolves): every segment is read, ties go by time,
// the cut keeps the first offset+limit in that order, and each element's
// value comes back for the liaison's merge.
func TestOrderByTag(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixture(t, s) // code = k*100 + service number, time order by id
	tr := timeRange(base, base.Add(72*time.Hour))
	byCode := slices.Clone(es)
	slices.SortStableFunc(byCode, func(a, b elem) int { return int(a.code - b.code) })
	for _, desc := range []bool{false, true} {
		want := make([]string, 0, len(byCode))
		for _, e := range byCode {
			want = append(want, e.id)
		}
		if desc {
			slices.Reverse(want) // code desc, ties by time desc
		}
		sort := modelv1.Sort_SORT_ASC
		if desc {
			sort = modelv1.Sort_SORT_DESC
		}
		q := streamQuery(&streamv1.QueryRequest{TimeRange: tr, Limit: 7, Offset: 3, OrderBy: &modelv1.QueryOrder{IndexRuleName: "code-rule", Sort: sort}})
		q.OrderTag = "code"
		res, err := s.QueryStreamResult(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(res.GetElements()); !slices.Equal(got, want[:10]) {
			t.Errorf("desc=%v: %v, want %v", desc, got, want[:10])
		}
		if len(res.GetOrderKeys()) != len(res.GetElements()) {
			t.Fatalf("%d order keys for %d elements", len(res.GetOrderKeys()), len(res.GetElements()))
		}
		for i, el := range res.GetElements() {
			e := es[slices.IndexFunc(es, func(e elem) bool { return e.id == el.GetElementId() })]
			if k := res.GetOrderKeys()[i].GetInt().GetValue(); k != e.code {
				t.Errorf("order key of %s = %d, want its code %d", e.id, k, e.code)
			}
		}
	}
	q := streamQuery(&streamv1.QueryRequest{TimeRange: tr, OrderBy: &modelv1.QueryOrder{IndexRuleName: "r"}})
	q.OrderTag = "nope"
	if _, err := s.QueryStreamResult(context.Background(), q); !errors.Is(err, queue.ErrInvalidMessage) {
		t.Errorf("order by an unknown tag: %v, want invalid", err)
	}
}

func matchCond(tag, analyzer string, v *modelv1.TagValue) *modelv1.Criteria {
	c := cond(tag, modelv1.Condition_BINARY_OP_MATCH, v)
	c.GetCondition().MatchOption = &modelv1.Condition_MatchOption{Analyzer: analyzer}
	return c
}

func matchCondAnd(tag, analyzer string, v *modelv1.TagValue) *modelv1.Criteria {
	c := matchCond(tag, analyzer, v)
	c.GetCondition().MatchOption.Operator = modelv1.Condition_MatchOption_OPERATOR_AND
	return c
}

func es2ids(es []elem) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.id
	}
	return out
}
