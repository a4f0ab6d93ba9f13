package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStreamRoundTripAllTagTypes(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	e := elem{service: "svc", instance: "i-1", id: "e1", ts: base.Add(123 * time.Nanosecond), code: -7}
	mustWriteStream(t, s, []elem{e})

	got := mustQueryStream(t, s, &streamv1.QueryRequest{
		TimeRange:  timeRange(base, base.Add(time.Hour)),
		Projection: allStreamTags(),
	})
	v := e.value()
	want := []*streamv1.Element{{
		ElementId: "e1",
		Timestamp: timestamppb.New(e.ts),
		TagFamilies: []*modelv1.TagFamily{
			{Name: "default", Tags: []*modelv1.Tag{
				{Key: "service", Value: v.TagFamilies[0].Tags[0]},
				{Key: "instance", Value: v.TagFamilies[0].Tags[1]},
			}},
			{Name: "searchable", Tags: []*modelv1.Tag{
				{Key: "code", Value: v.TagFamilies[1].Tags[0]},
				{Key: "labels", Value: v.TagFamilies[1].Tags[1]},
				{Key: "ids", Value: v.TagFamilies[1].Tags[2]},
				{Key: "blob", Value: v.TagFamilies[1].Tags[3]},
				{Key: "at", Value: v.TagFamilies[1].Tags[4]},
				{Key: "opt", Value: v.TagFamilies[1].Tags[5]},
			}},
		},
	}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Fatalf("elements (-want +got):\n%s", diff)
	}
}

func TestMeasureRoundTripAllFieldTypes(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	p := point{service: "svc", ts: base, code: 200, total: 42, version: 3}
	mustWriteMeasure(t, s, []point{p})

	resp, err := s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{
		TimeRange: timeRange(base, base.Add(time.Minute)),
		TagProjection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
			{Name: "default", Tags: []string{"code", "service"}},
		}},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"raw", "total", "ratio", "label"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	v := p.value()
	want := []*measurev1.DataPoint{{
		Timestamp: timestamppb.New(base),
		TagFamilies: []*modelv1.TagFamily{{Name: "default", Tags: []*modelv1.Tag{
			{Key: "code", Value: intv(200)},
			{Key: "service", Value: str("svc")},
		}}},
		Fields: []*measurev1.DataPoint_Field{
			{Name: "raw", Value: v.Fields[3]},
			{Name: "total", Value: v.Fields[0]},
			{Name: "ratio", Value: v.Fields[1]},
			{Name: "label", Value: v.Fields[2]},
		},
		Version: 3,
	}}
	got := resp.GetDataPoints()
	if len(got) == 1 {
		if got[0].GetSid() == 0 {
			t.Error("sid is 0, want the series hash")
		}
		got[0].Sid = 0
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Fatalf("data points (-want +got):\n%s", diff)
	}
}

func TestRedeliveryDoesNotDuplicate(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	var es []elem
	var ps []point
	for i := range 10 {
		es = append(es, elem{service: "svc", instance: fmt.Sprintf("i-%d", i%3), id: fmt.Sprintf("e%d", i), ts: base.Add(time.Duration(i) * time.Second)})
		ps = append(ps, point{service: fmt.Sprintf("svc-%d", i%2), ts: base.Add(time.Duration(i) * time.Second), total: int64(i)})
	}
	for range 3 { // first delivery plus two redeliveries
		mustWriteStream(t, s, es)
		mustWriteMeasure(t, s, ps)
	}
	got := mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour)), Limit: 100})
	if len(got) != len(es) {
		t.Errorf("stream: %d elements after redelivery, want %d", len(got), len(es))
	}
	resp, err := s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{
		TimeRange: timeRange(base, base.Add(time.Hour)), Limit: 100,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetDataPoints()); n != len(ps) {
		t.Errorf("measure: %d data points after redelivery, want %d", n, len(ps))
	}
}

func TestMeasureVersionWins(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	get := func() (int64, int64) {
		t.Helper()
		resp, err := s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{
			TimeRange:       timeRange(base, base.Add(time.Second)),
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"total"}},
		}))
		if err != nil || len(resp.GetDataPoints()) != 1 {
			t.Fatalf("query: %v, %d points", err, len(resp.GetDataPoints()))
		}
		dp := resp.GetDataPoints()[0]
		return dp.GetVersion(), dp.GetFields()[0].GetValue().GetInt().GetValue()
	}
	steps := []struct {
		write              point
		wantVer, wantTotal int64
	}{
		{point{service: "a", ts: base, total: 1, version: 2}, 2, 1},
		{point{service: "a", ts: base, total: 2, version: 1}, 2, 1}, // lower version ignored
		{point{service: "a", ts: base, total: 3, version: 2}, 2, 3}, // equal version: later wins
		{point{service: "a", ts: base, total: 4, version: 5}, 5, 4}, // higher version wins
	}
	for i, st := range steps {
		mustWriteMeasure(t, s, []point{st.write})
		if v, total := get(); v != st.wantVer || total != st.wantTotal {
			t.Errorf("after step %d: version %d total %d, want %d %d", i, v, total, st.wantVer, st.wantTotal)
		}
	}
	// In one batch, too: the highest version wins regardless of position.
	mustWriteMeasure(t, s, []point{
		{service: "a", ts: base, total: 9, version: 9},
		{service: "a", ts: base, total: 8, version: 8},
	})
	if v, total := get(); v != 9 || total != 9 {
		t.Errorf("after batch: version %d total %d, want 9 9", v, total)
	}
}

func TestBadMessageFailsAlone(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	good1 := elem{service: "svc", instance: "i", id: "good1", ts: base}
	good2 := elem{service: "svc", instance: "i", id: "good2", ts: base.Add(time.Second)}
	noTS := good1.value()
	noTS.Timestamp = nil
	marshal := func(m *clusterv1.StreamWrite) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key := streamSeriesKey(t, "svc", "i")
	msgs := [][]byte{
		good1.msg(t),
		[]byte("\xff\xffnot a protobuf"),
		marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream, SeriesKey: key, Element: noTS}),
		marshal(&clusterv1.StreamWrite{Name: testStream, SeriesKey: key, Element: good1.value()}),
		marshal(&clusterv1.StreamWrite{Group: testGroup, SeriesKey: key, Element: good1.value()}),
		marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream, Element: good1.value()}),
		marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream, SeriesKey: key}),
		good2.msg(t),
	}
	errs := s.WriteStream(context.Background(), msgs)
	if len(errs) != len(msgs) {
		t.Fatalf("got %d errors for %d messages", len(errs), len(msgs))
	}
	for i, err := range errs {
		bad := i != 0 && i != len(msgs)-1
		if bad != (err != nil) {
			t.Errorf("message %d: err = %v, want failure %v", i, err, bad)
		}
		if bad && !errors.Is(err, queue.ErrInvalidMessage) {
			t.Errorf("message %d: %v does not wrap queue.ErrInvalidMessage", i, err)
		}
	}
	got := ids(mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))}))
	if want := []string{"good1", "good2"}; !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v", got, want)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	mustWriteStream(t, s, []elem{{service: "svc", instance: "i", id: "e1", ts: base}, {service: "svc", instance: "i", id: "e2", ts: base.Add(48 * time.Hour)}})
	mustWriteMeasure(t, s, []point{{service: "svc", ts: base, total: 5}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, nil)
	got := ids(mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base.Add(-time.Hour), base.Add(72*time.Hour))}))
	if want := []string{"e1", "e2"}; !slices.Equal(got, want) {
		t.Errorf("after reopen: %v, want %v", got, want)
	}
	resp, err := s.QueryMeasure(context.Background(), measureQuery(&measurev1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Second))}))
	if err != nil || len(resp.GetDataPoints()) != 1 {
		t.Errorf("measure after reopen: %v, %d points", err, len(resp.GetDataPoints()))
	}
}

func TestClosedStoreFailsClearly(t *testing.T) {
	s := New(Config{Dir: t.TempDir()}, nil, nil)
	msgs := streamMsgs(t, []elem{{service: "svc", instance: "i", id: "e", ts: base}})
	if errs := s.WriteStream(context.Background(), msgs); len(errs) != 1 || !errors.Is(errs[0], ErrClosed) {
		t.Fatalf("write before start: %v, want ErrClosed", errs)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errs := s.WriteStream(context.Background(), msgs); errs != nil {
		t.Fatalf("write: %v", errs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	errs := s.WriteStream(context.Background(), msgs)
	if len(errs) != 1 || !errors.Is(errs[0], ErrClosed) || !errors.Is(errs[0], queue.ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed wrapping queue.ErrClosed", errs)
	}
	if _, err := s.QueryStream(context.Background(), streamQuery(&streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))})); !errors.Is(err, ErrClosed) {
		t.Fatalf("query after close: %v, want ErrClosed", err)
	}
	if _, err := s.DropExpired(time.Now(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("retention after close: %v, want ErrClosed", err)
	}
}

func TestRetentionDropsExpiredSegments(t *testing.T) {
	dir := t.TempDir()
	hourly := SegmentIntervalFunc(func(string) time.Duration { return time.Hour })
	s := openStore(t, dir, hourly)
	now := base
	mustWriteStream(t, s, []elem{
		{service: "svc", instance: "i", id: "old", ts: now.Add(-5 * time.Hour)},
		{service: "svc", instance: "i", id: "edge", ts: now.Add(-2*time.Hour - time.Minute)}, // its segment ends at now-2h
		{service: "svc", instance: "i", id: "new", ts: now.Add(-30 * time.Minute)},
	})
	all := &streamv1.QueryRequest{TimeRange: timeRange(now.Add(-24*time.Hour), now.Add(time.Hour))}

	dropped, err := s.DropExpired(now, map[string]time.Duration{"other": time.Nanosecond})
	if err != nil || dropped != 0 {
		t.Fatalf("drop for another group: %d, %v", dropped, err)
	}
	if dropped, err = s.DropExpired(now, map[string]time.Duration{testGroup: 2 * time.Hour}); err != nil || dropped != 2 {
		t.Fatalf("dropped %d segments, %v; want 2", dropped, err)
	}
	if got := ids(mustQueryStream(t, s, all)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("after retention: %v, want [new]", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, hourly)
	if got := ids(mustQueryStream(t, s, all)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("after reopen: %v, want [new]", got)
	}
	db, _ := s.DB()
	if segs := db.Segments(); len(segs) != 1 {
		t.Errorf("segments after reopen: %v, want one", segs)
	}
}

func TestConcurrentBatches(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	const writers, batches, perBatch = 6, 10, 50
	var wg sync.WaitGroup
	errc := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				es := make([]elem, perBatch)
				for i := range es {
					n := (w*batches+b)*perBatch + i
					es[i] = elem{service: fmt.Sprintf("svc-%d", w), instance: "i", id: fmt.Sprintf("e%06d", n), ts: base.Add(time.Duration(n) * time.Millisecond)}
				}
				if errs := s.WriteStream(context.Background(), streamMsgs(t, es)); errs != nil {
					errc <- fmt.Errorf("writer %d batch %d: %v", w, b, errs)
				}
				// Queries run alongside the writes.
				if _, err := s.QueryStream(context.Background(), streamQuery(&streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))})); err != nil {
					errc <- err
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	got := mustQueryStream(t, s, &streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour)), Limit: writers * batches * perBatch * 2})
	if len(got) != writers*batches*perBatch {
		t.Fatalf("got %d elements, want %d", len(got), writers*batches*perBatch)
	}
	for i, e := range got {
		if want := fmt.Sprintf("e%06d", i); e.GetElementId() != want {
			t.Fatalf("element %d is %s, want %s (time order)", i, e.GetElementId(), want)
		}
	}
}

func TestListeners(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	ls := s.Listeners()
	for _, topic := range []queue.Topic{queue.TopicStreamWrite, queue.TopicMeasureWrite, queue.TopicStreamQuery, queue.TopicMeasureQuery} {
		if ls[topic] == nil {
			t.Fatalf("no listener for %s", topic)
		}
	}
	ctx := context.Background()
	res := ls[queue.TopicStreamWrite].Handle(ctx, queue.Batch{Topic: queue.TopicStreamWrite, Messages: [][]byte{
		elem{service: "svc", instance: "i", id: "e1", ts: base}.msg(t), []byte("junk"),
	}})
	if len(res.Errs) != 2 || res.Errs[0] != nil || !errors.Is(res.Errs[1], queue.ErrInvalidMessage) {
		t.Fatalf("stream write result: %v", res.Errs)
	}
	res = ls[queue.TopicMeasureWrite].Handle(ctx, queue.Batch{Topic: queue.TopicMeasureWrite, Messages: [][]byte{
		point{service: "svc", ts: base, total: 1}.msg(t),
	}})
	if res.Errs != nil {
		t.Fatalf("measure write result: %v", res.Errs)
	}

	good, _ := proto.Marshal(streamQuery(&streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))}))
	noRange, _ := proto.Marshal(streamQuery(&streamv1.QueryRequest{}))
	res = ls[queue.TopicStreamQuery].Handle(ctx, queue.Batch{Topic: queue.TopicStreamQuery, Messages: [][]byte{good, noRange, []byte("junk")}})
	if len(res.Replies) != 3 || len(res.Errs) != 3 || res.Errs[0] != nil || res.Errs[1] == nil || res.Errs[2] == nil {
		t.Fatalf("stream query result: %d replies, errs %v", len(res.Replies), res.Errs)
	}
	var sr clusterv1.StreamQueryResult
	if err := proto.Unmarshal(res.Replies[0], &sr); err != nil || len(sr.GetElements()) != 1 || len(sr.GetSeriesKeys()) != 1 || len(sr.GetVersions()) != 1 ||
		len(sr.GetSeriesKeys()[0]) == 0 {
		t.Fatalf("stream reply: %v, %d elements, %d series keys, %d versions", err, len(sr.GetElements()), len(sr.GetSeriesKeys()), len(sr.GetVersions()))
	}
	if !strings.Contains(res.Errs[1].Error(), "time range") {
		t.Errorf("missing time range error does not say so: %v", res.Errs[1])
	}

	mq, _ := proto.Marshal(measureQuery(&measurev1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))}))
	res = ls[queue.TopicMeasureQuery].Handle(ctx, queue.Batch{Topic: queue.TopicMeasureQuery, Messages: [][]byte{mq}})
	var mr measurev1.QueryResponse
	if res.Errs != nil || proto.Unmarshal(res.Replies[0], &mr) != nil || len(mr.GetDataPoints()) != 1 {
		t.Fatalf("measure query: errs %v, %d points", res.Errs, len(mr.GetDataPoints()))
	}
}

// Writes, queries and retention racing with Stop either finish or fail with
// ErrClosed: never a panic, never another error.
func TestStopDuringTraffic(t *testing.T) {
	s := New(Config{Dir: t.TempDir()}, nil, slog.New(slog.DiscardHandler))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 4)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				var err error
				switch w {
				case 0, 1:
					errs := s.WriteStream(context.Background(), streamMsgs(t, []elem{{service: "svc", instance: "i", id: fmt.Sprint(w, i), ts: base}}))
					if errs != nil {
						err = errs[0]
					}
				case 2:
					_, err = s.QueryStream(context.Background(), streamQuery(&streamv1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))}))
				default:
					_, err = s.DropExpired(base, map[string]time.Duration{testGroup: 365 * 24 * time.Hour})
				}
				if i == 0 {
					started <- struct{}{}
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errc <- err
					return
				}
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("unexpected error while stopping: %v", err)
	}
}
