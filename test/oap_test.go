package test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/elementid"
)

// TestOAPClient drives banyand the way SkyWalking OAP 10.4's BanyanDB
// storage plugin does, from connecting to reading metrics back: what OAP
// would refuse or have to work around fails here.
func TestOAPClient(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		runOAP(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		runOAP(t, c.liaisons[0])
	})
}

func runOAP(t *testing.T, conn *grpc.ClientConn) {
	// BanyanDBStorageClient.connect refuses any API version but 0.10.
	checkAPIVersion(t, conn)
	r := newOAPRegistries(conn)
	t.Run("schema", func(t *testing.T) { checkOAPSchema(t, r) })
	if t.Failed() {
		return
	}
	t.Run("data", func(t *testing.T) { checkOAPData(t, conn) })
	t.Run("ui templates", func(t *testing.T) { checkOAPProperties(t, conn) })
	t.Run("traces", func(t *testing.T) { checkOAPTraces(t, conn) })
}

// expectedCreates is everything a first boot over an empty server creates
// with topN configured.
func expectedCreates(topN []oapTopN) []string {
	var want []string
	for name := range oapGroups {
		want = append(want, "group "+name)
	}
	rules := map[string]bool{}
	addRules := func(rs []*databasev1.IndexRule) {
		for _, r := range rs {
			rules["index rule "+objName(r.GetMetadata())] = true
		}
	}
	for _, m := range oapMeasures() {
		want = append(want, "measure "+objName(m.md()), "index rule binding "+objName(m.md()))
		addRules(m.indexRules())
		for _, n := range m.topNs(topN) {
			want = append(want, "topN aggregation "+objName(n.GetMetadata()))
		}
	}
	s := oapAlarmStream()
	want = append(want, "stream "+objName(s.md()), "index rule binding "+objName(s.md()))
	addRules(s.indexRules())
	tr, trRules, _ := oapSegmentTrace()
	want = append(want, "trace "+objName(tr.GetMetadata()), "index rule binding "+objName(tr.GetMetadata()))
	addRules(trRules)
	want = append(want, "property "+objName(oapUITemplate().GetMetadata()))
	for r := range rules {
		want = append(want, r)
	}
	sort.Strings(want)
	return want
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

func checkOAPSchema(t *testing.T, r *oapRegistries) {
	ctx := ctxT(t)
	// The first boot's bydb-topn.yml still has a rule the second boot's
	// no longer configures.
	firstTopN := append(slices.Clone(oapTopNRules), oapRetiredTopN)
	first := newOAPBoot(t, r)
	first.install(firstTopN)
	if got, want := sortedCopy(first.created), expectedCreates(firstTopN); !slices.Equal(got, want) {
		t.Errorf("first boot created\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(first.updated) > 0 {
		t.Errorf("first boot updated what it had just created:\n  %s", strings.Join(first.updated, "\n  "))
	}
	if deleted := first.cleanupTopN(firstTopN); len(deleted) > 0 {
		t.Errorf("first boot's cleanup deleted configured TopN aggregations %v", deleted)
	}

	// The bindings keep the begin_at and expire_at the client filled in.
	for _, sent := range first.bindings {
		got, err := r.bindings.get(ctx, sent.GetMetadata())
		if err != nil {
			t.Fatalf("index rule binding Get %s: %v", objName(sent.GetMetadata()), err)
		}
		if !proto.Equal(got.GetBeginAt(), sent.GetBeginAt()) || !proto.Equal(got.GetExpireAt(), sent.GetExpireAt()) {
			t.Errorf("index rule binding %s: begin_at %v expire_at %v, sent %v and %v", objName(sent.GetMetadata()),
				got.GetBeginAt().AsTime(), got.GetExpireAt().AsTime(), sent.GetBeginAt().AsTime(), sent.GetExpireAt().AsTime())
		}
	}

	// A second boot finds everything as it would create it: no create, no
	// update (OAP would otherwise update on every boot).
	second := newOAPBoot(t, r)
	second.install(oapTopNRules)
	if len(second.created) > 0 {
		t.Errorf("second boot created what the first had created:\n  %s", strings.Join(second.created, "\n  "))
	}
	if len(second.updated) > 0 {
		t.Errorf("second boot found objects differing from what OAP sends:\n  %s", strings.Join(second.updated, "\n  "))
	}
	// Groups too read back as sent.
	for name := range oapGroups {
		resp, err := r.groups.Get(ctx, &databasev1.GroupRegistryServiceGetRequest{Group: name})
		if err != nil {
			t.Fatalf("group Get %s: %v", name, err)
		}
		if got, want := cleared(resp.GetGroup(), "updated_at", "metadata"), cleared(oapGroup(name), "metadata"); !proto.Equal(got, want) {
			t.Errorf("group %s reads back as {%s}, sent {%s}", name, prototext.Format(got), prototext.Format(want))
		}
	}

	// The cleanup deletes the retired rule from every measure group that
	// has it, and it is gone.
	var wantDeleted []string
	for _, m := range oapMeasures() {
		for _, n := range m.topNs([]oapTopN{oapRetiredTopN}) {
			wantDeleted = append(wantDeleted, objName(n.GetMetadata()))
		}
	}
	sort.Strings(wantDeleted)
	if got := sortedCopy(second.cleanupTopN(oapTopNRules)); !slices.Equal(got, wantDeleted) {
		t.Errorf("second boot's cleanup deleted %v, want %v", got, wantDeleted)
	}
	for _, name := range wantDeleted {
		group, rule, _ := strings.Cut(name, "/")
		poll.Until(t, "TopN aggregation "+name+" gone", func() bool {
			_, err := r.topNs.get(ctx, &commonv1.Metadata{Group: group, Name: rule})
			if status.Code(err) != codes.NotFound {
				return false
			}
			aggs, err := r.topNList(ctx, group)
			if err != nil {
				t.Fatalf("topN aggregation List %s: %v", group, err)
			}
			return !slices.ContainsFunc(aggs, func(a *databasev1.TopNAggregation) bool { return a.GetMetadata().GetName() == rule })
		})
	}
	if deleted := newOAPBoot(t, r).cleanupTopN(oapTopNRules); len(deleted) > 0 {
		t.Errorf("a third cleanup still deleted %v", deleted)
	}
}

// oapPoint is measure k's point for entity i: every tag and field holds a
// value no other tag or field holds.
func oapPoint(m *oapModel, k, i int, ts time.Time) *oapMeasureWrite {
	w := &oapMeasureWrite{md: m.md(), ts: ts, tags: map[string]map[string]*modelv1.TagValue{}, fields: map[string]*modelv1.FieldValue{}}
	fams := m.familyOf()
	for ci, c := range m.cols {
		if c.field != databasev1.FieldType_FIELD_TYPE_UNSPECIFIED {
			w.fields[c.name] = &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: int64((k*1000+i)*100 + ci)}}}
			continue
		}
		if w.tags[fams[c.name]] == nil {
			w.tags[fams[c.name]] = map[string]*modelv1.TagValue{}
		}
		w.tags[fams[c.name]][c.name] = str(fmt.Sprintf("%s-%d-%d", c.name, k, i))
	}
	return w
}

// oapAlarm is alarm record i at ts.
func oapAlarm(m *oapModel, i int, ts time.Time) *oapStreamWrite {
	v := func(name string) *modelv1.TagValue { return str(fmt.Sprintf("%s-%d", name, i)) }
	return &oapStreamWrite{
		md: m.md(), id: fmt.Sprintf("alarm-%03d", i), ts: ts,
		tags: map[string]map[string]*modelv1.TagValue{
			famSearchable: {
				"scope":         num(int64(i % 7)),
				"alarm_message": v("alarm_message"),
				"rule_name":     v("rule_name"),
				"tags":          {Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"layer=GENERAL", fmt.Sprint("n=", i)}}}},
				"uuid":          v("uuid"),
			},
			famStorageOnly: {
				"name":          v("name"),
				"id0":           v("id0"),
				"id1":           v("id1"),
				"start_time":    num(ts.UnixMilli()),
				"tags_raw_data": {Value: &modelv1.TagValue_BinaryData{BinaryData: []byte(fmt.Sprint("raw-", i))}},
				"snapshot":      v("snapshot"),
			},
		},
	}
}

func checkFlush(t *testing.T, what string, res flushResult, err error, n int) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if res.sent != n || len(res.answered) != n || res.statuses[modelv1.Status_STATUS_SUCCEED.String()] != n {
		t.Errorf("%s: sent %d of %d, %d answers, statuses %v", what, res.sent, n, len(res.answered), res.statuses)
		return
	}
	if got, want := slices.Sorted(slices.Values(res.answered)), slices.Sorted(slices.Values(res.ids)); !slices.Equal(got, want) {
		t.Errorf("%s: answered message ids differ from the ones sent", what)
	}
}

const oapEntities = 30

func checkOAPData(t *testing.T, conn *grpc.ClientConn) {
	ctx := ctxT(t)
	now := time.Now()
	bucket := map[string]time.Time{"1m": now.Truncate(time.Minute), "1h": now.Truncate(time.Hour), "1d": now.Truncate(24 * time.Hour)}
	measures := oapMeasures()

	// Measure flushes: runs of five points of one measure, the measures
	// taking turns, spread over three concurrent flushes so that each
	// flush interleaves measures and comes back to one after others.
	var flushes [3][]*oapMeasureWrite
	chunk := 0
	for j := 0; j < oapEntities; j += 5 {
		for k, m := range measures {
			for i := j; i < j+5; i++ {
				flushes[chunk%len(flushes)] = append(flushes[chunk%len(flushes)], oapPoint(m, k, i, bucket[m.interval]))
			}
			chunk++
		}
	}
	stream := oapAlarmStream()
	const alarms = 40
	var alarmFlushes [2][]*oapStreamWrite
	for i := range alarms {
		alarmFlushes[i%2] = append(alarmFlushes[i%2], oapAlarm(stream, i, now.Add(time.Duration(i)*time.Millisecond)))
	}
	var wg sync.WaitGroup
	for f, writes := range flushes {
		wg.Go(func() {
			res, err := flushMeasures(conn, writes)
			checkFlush(t, fmt.Sprintf("measure flush %d", f), res, err, len(writes))
		})
	}
	for f, writes := range alarmFlushes {
		wg.Go(func() {
			res, err := flushStreams(conn, writes)
			checkFlush(t, fmt.Sprintf("stream flush %d", f), res, err, len(writes))
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// multiGet: all entities of a measure by IN, over the largest range
	// and over the point's own time bucket (begin == end).
	for k, m := range measures {
		ts := oapTimestamp(bucket[m.interval])
		want := map[string]*oapMeasureWrite{}
		var ids []string
		for i := range oapEntities {
			p := oapPoint(m, k, i, bucket[m.interval])
			id := fmt.Sprintf("entity_id-%d-%d", k, i)
			want[id] = p
			ids = append(ids, id)
		}
		for _, tr := range []*modelv1.TimeRange{oapLargestRange, {Begin: ts, End: ts}} {
			resp, err := oapMultiGet(ctx, conn, m, tr, ids)
			if err != nil {
				t.Fatalf("multiGet %s over [%v, %v]: %v", objName(m.md()), tr.GetBegin(), tr.GetEnd(), err)
			}
			checkPoints(t, fmt.Sprintf("%s over [%v, %v]", objName(m.md()), tr.GetBegin().AsTime(), tr.GetEnd().AsTime()), resp.GetDataPoints(), want)
		}
	}
	checkAlarms(t, conn, stream, alarms, now)

	// A re-write of a point (OAP's prepareBatchUpdate) takes a later
	// message id and wins on read.
	m := measures[0]
	ts := bucket[m.interval]
	again := oapPoint(m, 0, 0, ts)
	for name, f := range again.fields {
		again.fields[name] = &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: f.GetInt().GetValue() + 7_000_000}}}
	}
	res, err := flushMeasures(conn, []*oapMeasureWrite{again})
	checkFlush(t, "re-write flush", res, err, 1)
	resp, err := oapMultiGet(ctx, conn, m, &modelv1.TimeRange{Begin: oapTimestamp(ts), End: oapTimestamp(ts)}, []string{"entity_id-0-0"})
	if err != nil {
		t.Fatalf("multiGet after the re-write: %v", err)
	}
	checkPoints(t, "the re-written point", resp.GetDataPoints(), map[string]*oapMeasureWrite{"entity_id-0-0": again})
}

// checkPoints checks that points are exactly want (by entity id), each tag
// and field read back by name in its own family and column.
func checkPoints(t *testing.T, what string, points []*measurev1.DataPoint, want map[string]*oapMeasureWrite) {
	t.Helper()
	if len(points) != len(want) {
		t.Errorf("%s: %d points, want %d", what, len(points), len(want))
	}
	seen := map[string]bool{}
	for _, dp := range points {
		tags := map[string]*modelv1.TagValue{}
		for _, fam := range dp.GetTagFamilies() {
			for _, tag := range fam.GetTags() {
				tags[fam.GetName()+"."+tag.GetKey()] = tag.GetValue()
			}
		}
		var id string
		for key, v := range tags {
			if strings.HasSuffix(key, ".entity_id") {
				id = v.GetStr().GetValue()
			}
		}
		w, ok := want[id]
		if !ok || seen[id] {
			t.Errorf("%s: unexpected or repeated point with entity_id %q", what, id)
			continue
		}
		seen[id] = true
		if !dp.GetTimestamp().AsTime().Equal(w.ts.Truncate(time.Millisecond)) {
			t.Errorf("%s %s: timestamp %v, want %v", what, id, dp.GetTimestamp().AsTime(), w.ts)
		}
		for fam, ts := range w.tags {
			for tag, v := range ts {
				if got := tags[fam+"."+tag]; !proto.Equal(got, v) {
					t.Errorf("%s %s: tag %s.%s = %v, want %v", what, id, fam, tag, got, v)
				}
			}
		}
		fields := map[string]*modelv1.FieldValue{}
		for _, f := range dp.GetFields() {
			fields[f.GetName()] = f.GetValue()
		}
		for name, v := range w.fields {
			if got := fields[name]; !proto.Equal(got, v) {
				t.Errorf("%s %s: field %s = %v, want %v", what, id, name, got, v)
			}
		}
	}
}

// checkAlarms reads the alarm records back: every tag by name.
func checkAlarms(t *testing.T, conn *grpc.ClientConn, m *oapModel, n int, start time.Time) {
	t.Helper()
	proj := m.projection()
	resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
		Groups:     []string{m.group},
		Name:       m.name,
		TimeRange:  &modelv1.TimeRange{Begin: oapTimestamp(start.Add(-time.Hour)), End: oapTimestamp(start.Add(time.Hour))},
		Limit:      uint32(n + 10),
		Projection: proj,
	})
	if err != nil {
		t.Fatalf("stream query %s: %v", objName(m.md()), err)
	}
	if len(resp.GetElements()) != n {
		t.Errorf("stream %s: %d elements, want %d", objName(m.md()), len(resp.GetElements()), n)
	}
	written := make(map[string]int, n) // answered id -> i
	for i := range n {
		written[elementid.Of(m.group, m.name, oapAlarm(m, i, start).id)] = i
	}
	for _, el := range resp.GetElements() {
		i, ok := written[el.GetElementId()]
		if !ok {
			t.Errorf("unexpected element %q", el.GetElementId())
			continue
		}
		w := oapAlarm(m, i, start.Add(time.Duration(i)*time.Millisecond))
		if !el.GetTimestamp().AsTime().Equal(w.ts.Truncate(time.Millisecond)) {
			t.Errorf("element %s: timestamp %v, want %v", w.id, el.GetTimestamp().AsTime(), w.ts)
		}
		got := map[string]*modelv1.TagValue{}
		for _, fam := range el.GetTagFamilies() {
			for _, tag := range fam.GetTags() {
				got[fam.GetName()+"."+tag.GetKey()] = tag.GetValue()
			}
		}
		for fam, tags := range w.tags {
			for tag, v := range tags {
				if !proto.Equal(got[fam+"."+tag], v) {
					t.Errorf("element %s: tag %s.%s = %v, want %v", w.id, fam, tag, got[fam+"."+tag], v)
				}
			}
		}
	}
}
