package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/tagindex"
)

// testIndexSpec indexes every tag of streamSchema that conditions find by
// term, instance also by each analyzer.
var testIndexSpec = tagindex.Spec{
	{Family: 0, Tag: 0, Name: "service"},
	{Family: 0, Tag: 1, Name: "instance"},
	{Family: 0, Tag: 1, Name: "instance", Analyzer: "keyword"},
	{Family: 0, Tag: 1, Name: "instance", Analyzer: "simple"},
	{Family: 0, Tag: 1, Name: "instance", Analyzer: "standard"},
	{Family: 1, Tag: 0, Name: "code", Sorted: true},
	{Family: 1, Tag: 1, Name: "labels"},
	{Family: 1, Tag: 2, Name: "ids"},
	{Family: 1, Tag: 4, Name: "at"},
}.Normalize().Append(nil)

func indexedStreamMsgs(t testing.TB, es []elem, spec []byte) [][]byte {
	return indexedStreamMsgsWith(t, es, spec, nil)
}

// indexedStreamMsgsWith is indexedStreamMsgs with each value changed by
// edit first, when set.
func indexedStreamMsgsWith(t testing.TB, es []elem, spec []byte, edit func(i int, v *streamv1.ElementValue)) [][]byte {
	t.Helper()
	msgs := make([][]byte, len(es))
	for i, e := range es {
		v := e.value()
		if edit != nil {
			edit(i, v)
		}
		b, err := proto.Marshal(&clusterv1.StreamWrite{
			Group: testGroup, Name: testStream, SeriesKey: streamSeriesKey(t, e.service, e.instance),
			Element: v, IndexSpec: spec,
		})
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = b
	}
	return msgs
}

func mustWriteIndexed(t testing.TB, s *Store, es []elem, spec []byte) {
	t.Helper()
	if errs := s.WriteStream(context.Background(), indexedStreamMsgs(t, es, spec)); errs != nil {
		t.Fatalf("write stream: %v", errs)
	}
}

func queryStats(t *testing.T, s *Store, req *streamv1.QueryRequest) ([]string, scanStats) {
	t.Helper()
	var st scanStats
	res, err := s.doQueryStream(context.Background(), streamQuery(req), queryOpts{stats: &st})
	if err != nil {
		t.Fatalf("query %v: %v", req.GetCriteria(), err)
	}
	return ids(res.GetElements()), st
}

// indexable says which criteriaCases an index narrows (the others read
// every record): the cases' names are the contract.
var indexable = map[string]bool{
	"eq non-entity": true, "eq one entity tag": true, "ne": true, "lt": true, "ge le": true, "gt": true, "or": true,
	"type mismatch": true, "in strings": true, "in ints": true, "not in": true, "in of another type": true,
	"having one": true, "having all": true, "having not all": true, "having ints": true,
	"having of another type": true, "null eq": true, "match": true, "match and: every token": true,
	"match array: each item": true, "match keyword": true, "not having": true,
}

func TestIndexedQueriesMatchScans(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushed=%v", flush), func(t *testing.T) {
			s := openStore(t, t.TempDir(), nil)
			es := fixtureElems()
			mustWriteIndexed(t, s, es, testIndexSpec)
			if flush {
				db, _ := s.DB()
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			tr := timeRange(base, base.Add(72*time.Hour))
			for _, tc := range criteriaCases(es) {
				req := &streamv1.QueryRequest{TimeRange: tr, Criteria: tc.crit, Limit: 1000}
				got, st := queryStats(t, s, req)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				}
				if used := st.indexed > 0; used != indexable[tc.name] {
					t.Errorf("%s: index used in %d of %d segments, want used=%v", tc.name, st.indexed, st.segments, indexable[tc.name])
				}
				if st.indexed > 0 && st.scanned > len(tc.want)+len(es)/2 {
					t.Errorf("%s: the index read %d records for %d results", tc.name, st.scanned, len(tc.want))
				}
			}
		})
	}
}

// A segment holding writes made before a tag was indexed is read whole:
// its index would miss them.
func TestIndexNotUsedWhereSomeWritesWereNotIndexed(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixtureElems()
	half := len(es) / 2
	mustWriteIndexed(t, s, es[:half], nil)
	mustWriteIndexed(t, s, es[half:], testIndexSpec)
	tr := timeRange(base, base.Add(72*time.Hour))
	req := &streamv1.QueryRequest{TimeRange: tr, Criteria: eq("code", intv(201)), Limit: 1000}
	got, st := queryStats(t, s, req)
	var want []string
	for _, e := range es {
		if e.code == 201 {
			want = append(want, e.id)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The fixture spans 20 hours from noon: two day segments, the first
	// holding unindexed writes.
	if st.segments != 2 || st.indexed != 1 {
		t.Errorf("indexed %d of %d segments, want 1 of 2", st.indexed, st.segments)
	}
}

// Index records survive a restart (replayed from the write-ahead log, or
// read from Pebble after a flush) and the later write of an element
// wins: an index entry left by its earlier value finds the element, and
// the criteria, evaluated on what is stored, leave it out.
func TestIndexAfterRestartAndOverwrite(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	es := fixtureElems()
	mustWriteIndexed(t, s, es, testIndexSpec)
	changed := es[4]
	changed.code = 999
	mustWriteIndexed(t, s, []elem{changed}, testIndexSpec)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	tr := timeRange(base, base.Add(72*time.Hour))
	for _, tc := range []struct {
		crit *modelv1.Criteria
		want []string
	}{
		{eq("code", intv(999)), []string{changed.id}},
		{eq("code", intv(es[4].code)), func() []string {
			var out []string
			for _, e := range es {
				if e.code == es[4].code && e.id != changed.id {
					out = append(out, e.id)
				}
			}
			return out
		}()},
	} {
		got, st := queryStats(t, s, &streamv1.QueryRequest{TimeRange: tr, Criteria: tc.crit, Limit: 1000})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: got %v, want %v", tc.crit, got, tc.want)
		}
		if st.indexed == 0 {
			t.Errorf("%v: index not used after restart", tc.crit)
		}
	}
}

// The spans' time index is narrowed by tag indexes too.
func TestIndexedTraceSelection(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	spec := tagindex.Spec{{Family: 0, Tag: 2, Name: "service"}, {Family: 0, Tag: 4, Name: "duration"}}.Append(nil)
	var spans []span
	for i := range 40 {
		spans = append(spans, span{trace: fmt.Sprintf("t%02d", i/2), id: fmt.Sprintf("s%d", i), service: fmt.Sprintf("svc-%d", i%4),
			ts: base.Add(time.Duration(i) * time.Minute), duration: int64(i % 5)})
	}
	msgs := make([][]byte, len(spans))
	for i, sp := range spans {
		var w clusterv1.TraceWrite
		if err := proto.Unmarshal(sp.msg(t), &w); err != nil {
			t.Fatal(err)
		}
		w.IndexSpec = spec
		msgs[i], _ = proto.Marshal(&w)
	}
	if errs := s.WriteTrace(context.Background(), msgs); errs != nil {
		t.Fatal(errs)
	}
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := newTraceSchema(segmentSchema())
	if err != nil {
		t.Fatal(err)
	}
	crit := and(eq("service", str("svc-1")), cond("duration", modelv1.Condition_BINARY_OP_IN, ints(1, 3)))
	req := &tracev1.QueryRequest{Groups: []string{testGroup}, Name: "segment", Criteria: crit, Limit: 100,
		TimeRange: timeRange(base, base.Add(time.Hour))}
	var st scanStats
	res, err := s.selectTraces(context.Background(), db, &clusterv1.TraceQuery{Request: req, Schema: segmentSchema()}, ts, &st)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, k := range res.GetTraces() {
		got = append(got, k.GetTraceId())
	}
	for i, sp := range spans {
		if i%4 == 1 && (i%5 == 1 || i%5 == 3) {
			want = append(want, sp.trace)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("traces %v, want %v", got, want)
	}
	if st.indexed != 1 || st.scanned != len(want) {
		t.Errorf("read %+v: want the one segment through its index, %d records", st, len(want))
	}
}

// An order by a sorted int tag reads each segment in that order and stops
// early; it answers what a scan answers, nulls lowest, whatever the
// criteria, window and direction, and after an element's value changed.
func TestOrderBySortedIndexMatchesScan(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixtureElems()
	nulls := func(i int, v *streamv1.ElementValue) {
		if i%7 == 3 {
			v.TagFamilies[1].Tags[0] = null()
		}
	}
	if errs := s.WriteStream(context.Background(), indexedStreamMsgsWith(t, es, testIndexSpec, nulls)); errs != nil {
		t.Fatal(errs)
	}
	moved := es[10]
	moved.code = 1 // was 101: its entry of 101 stays behind
	mustWriteIndexed(t, s, []elem{moved}, testIndexSpec)
	tr := timeRange(base, base.Add(72*time.Hour))
	for _, crit := range []*modelv1.Criteria{nil, eq("service", str("svc-1")), cond("code", modelv1.Condition_BINARY_OP_GE, intv(200))} {
		for _, desc := range []bool{false, true} {
			for _, w := range [][2]uint32{{0, 5}, {3, 7}, {0, 100}} {
				order := &modelv1.QueryOrder{IndexRuleName: "code-rule", Sort: modelv1.Sort_SORT_ASC}
				if desc {
					order.Sort = modelv1.Sort_SORT_DESC
				}
				q := streamQuery(&streamv1.QueryRequest{TimeRange: tr, Criteria: crit, Offset: w[0], Limit: w[1], OrderBy: order, Projection: allStreamTags()})
				q.OrderTag = "code"
				var st scanStats
				got, err := s.doQueryStream(context.Background(), q, queryOpts{stats: &st})
				if err != nil {
					t.Fatal(err)
				}
				want, err := s.doQueryStream(context.Background(), q, queryOpts{forceScan: true})
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%v desc=%v window=%v", crit, desc, w)
				if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
					t.Errorf("%s: index differs from scan (-scan +index):\n%s", name, diff)
				}
				if st.indexed != st.segments || st.segments == 0 {
					t.Errorf("%s: %d of %d segments read through the index", name, st.indexed, st.segments)
				}
				if w[1] == 5 && crit == nil && st.scanned > 3*int(w[0]+w[1]) { // a scan reads all 61
					t.Errorf("%s: read %d records for %d", name, st.scanned, w[0]+w[1])
				}
			}
		}
	}
}

// Measures read through their tag indexes as streams do: a condition on a
// tag and an order by a sorted one answer what a scan answers.
func TestIndexedMeasureQueries(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	spec := tagindex.Spec{{Family: 0, Tag: 1, Name: "code", Sorted: true}}.Append(nil)
	var msgs [][]byte
	for i := range 90 {
		p := point{service: fmt.Sprintf("svc-%d", i%6), ts: base.Add(time.Duration(i) * 15 * time.Minute), code: int64(i % 9), total: int64(i)}
		var w clusterv1.MeasureWrite
		if err := proto.Unmarshal(p.msg(t), &w); err != nil {
			t.Fatal(err)
		}
		w.IndexSpec = spec
		b, err := proto.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	if errs := s.WriteMeasure(context.Background(), msgs); errs != nil {
		t.Fatal(errs)
	}
	tr := timeRange(base, base.Add(48*time.Hour))
	for _, tc := range []struct {
		crit     *modelv1.Criteria
		orderTag string
	}{
		{eq("code", intv(4)), ""},
		{cond("code", modelv1.Condition_BINARY_OP_LT, intv(2)), ""},
		{nil, "code"},
		{eq("service", str("svc-2")), "code"},
	} {
		req := &measurev1.QueryRequest{TimeRange: tr, Criteria: tc.crit, Limit: 7,
			TagProjection:   &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"service", "code"}}}},
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"total"}}}
		if tc.orderTag != "" {
			req.OrderBy = &modelv1.QueryOrder{IndexRuleName: "code-rule", Sort: modelv1.Sort_SORT_DESC}
		}
		q := measureQuery(req)
		q.OrderTag = tc.orderTag
		var st scanStats
		got, err := s.doQueryMeasure(context.Background(), q, queryOpts{stats: &st})
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.doQueryMeasure(context.Background(), q, queryOpts{forceScan: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" || len(got.GetDataPoints()) == 0 {
			t.Errorf("%v order %q: index differs from scan (-scan +index):\n%s", tc.crit, tc.orderTag, diff)
		}
		if tc.crit != nil && tc.crit.GetCondition().GetName() == "service" {
			continue // the service alone fixes the entity: a seek
		}
		if st.indexed == 0 {
			t.Errorf("%v order %q: no segment read through the index (%+v)", tc.crit, tc.orderTag, st)
		}
	}
}

// A write whose index spec does not decode (garbage from a peer) fails
// alone as invalid; the rest of its batch is stored and indexed.
func TestMalformedIndexSpecFailsItsWriteAlone(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixtureElems()[:3]
	msgs := indexedStreamMsgs(t, es, testIndexSpec)
	bad := indexedStreamMsgs(t, es[1:2], []byte{1, 0xff})
	msgs[1] = bad[0]
	errs := s.WriteStream(context.Background(), msgs)
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], queue.ErrInvalidMessage) || errs[2] != nil {
		t.Fatalf("errors %v, want only the second invalid", errs)
	}
	got, _ := queryStats(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour)), Limit: 10})
	if want := []string{es[0].id, es[2].id}; !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v", got, want)
	}
}

// Retention drops a segment's index records with its data, and a write
// made into the range again records its spec anew: the new segment's
// index answers for it.
func TestRetentionDropsIndexRecords(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	es := fixtureElems()
	mustWriteIndexed(t, s, es, testIndexSpec)
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DropExpired(base.Add(30*24*time.Hour), map[string]time.Duration{testGroup: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	late := es[7]
	mustWriteIndexed(t, s, []elem{late}, testIndexSpec)
	got, st := queryStats(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(72*time.Hour)), Criteria: eq("code", intv(late.code)), Limit: 100})
	if !slices.Equal(got, []string{late.id}) || st.indexed != 1 {
		t.Errorf("after the drop: %v (%+v), want %s read through the index", got, st, late.id)
	}
}
