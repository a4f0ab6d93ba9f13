package tsdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func openDB(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return db
}

var day = int64(24 * time.Hour)

func TestSegmentAssign(t *testing.T) {
	x := newSegmentIndex()
	h := time.Hour
	steps := []struct {
		ts         int64
		interval   time.Duration
		start, end int64
	}{
		{ts: 5 * day, interval: 24 * h, start: 5 * day, end: 6 * day},
		{ts: 6*day - 1, interval: 24 * h, start: 5 * day, end: 6 * day},                                 // existing segment
		{ts: 6 * day, interval: 24 * h, start: 6 * day, end: 7 * day},                                   // next one
		{ts: 5*day + 3, interval: h, start: 5 * day, end: 6 * day},                                      // existing wins over a new interval
		{ts: 4*day + 1, interval: 48 * h, start: 4 * day, end: 5 * day},                                 // aligned 4..6 days, clipped at 5
		{ts: -1, interval: 24 * h, start: -day, end: 0},                                                 // negative times floor
		{ts: 8*day + 5, interval: 7 * 24 * h, start: 7 * day, end: 14 * day},                            // 7-day alignment from the epoch
		{ts: 2 * day, interval: 7 * 24 * h, start: 0, end: 4 * day},                                     // aligned 0..7, clipped by the day-4 segment
		{ts: math.MaxInt64 - 1, interval: 24 * h, start: math.MaxInt64 / day * day, end: math.MaxInt64}, // no overflow
	}
	for i, st := range steps {
		s := x.assign(KindStream, "g", st.ts, st.interval)
		if s.Start != st.start || s.End != st.end {
			t.Errorf("step %d ts %d: [%d, %d), want [%d, %d)", i, st.ts, s.Start, s.End, st.start, st.end)
		}
		if s.Start > st.ts || st.ts >= s.End {
			t.Errorf("step %d: segment %v does not hold ts %d", i, s, st.ts)
		}
	}
	all := x.all()
	for i := 1; i < len(all); i++ {
		if all[i-1].End > all[i].Start {
			t.Errorf("segments overlap: %v and %v", all[i-1], all[i])
		}
	}
}

func TestSegmentMetaKeyRoundTrip(t *testing.T) {
	for _, g := range []string{"g", "", strings.Repeat("x", 300)} {
		for _, start := range []int64{0, -5, math.MinInt64, math.MaxInt64} {
			k := segmentMetaKey(nil, KindMeasure, g, start)
			kind, group, s, err := parseSegmentMetaKey(k)
			if err != nil || kind != KindMeasure || group != g || s != start {
				t.Errorf("%q %d: got %v %q %d %v", g, start, kind, group, s, err)
			}
		}
	}
}

func TestKeyOrder(t *testing.T) {
	// Within a name prefix: by series hash, then timestamp (negatives first),
	// then element id.
	p := namePrefix(nil, KindStream, "g", 0, "n")
	keys := [][]byte{
		dataKey(bytes.Clone(p), 1, math.MinInt64, ""),
		dataKey(bytes.Clone(p), 1, -1, "b"),
		dataKey(bytes.Clone(p), 1, 0, ""),
		dataKey(bytes.Clone(p), 1, 0, "a"),
		dataKey(bytes.Clone(p), 1, 0, "b"),
		dataKey(bytes.Clone(p), 1, math.MaxInt64, ""),
		dataKey(bytes.Clone(p), 2, math.MinInt64, ""),
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Error("keys are not in the documented order")
	}
	// Group names of different lengths never share a prefix.
	a := segmentPrefix(nil, KindStream, "ab", 0)
	b := segmentPrefix(nil, KindStream, "a", 0)
	if bytes.HasPrefix(a, b) || bytes.HasPrefix(b, a) {
		t.Error("group prefixes are ambiguous")
	}
}

func scanAll(t testing.TB, db *DB, kind Kind, group, name string, series []byte) []Item {
	t.Helper()
	var out []Item
	for _, seg := range db.SegmentsIn(kind, group, math.MinInt64, math.MaxInt64) {
		err := db.ScanSegment(context.Background(), seg, Scan{Name: name, Begin: math.MinInt64, End: math.MaxInt64, SeriesKey: series},
			func(it *Item) error {
				c := *it
				c.SeriesKey, c.ElementID, c.Payload = bytes.Clone(it.SeriesKey), bytes.Clone(it.ElementID), bytes.Clone(it.Payload)
				out = append(out, c)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestWriteScanAndSeriesIsolation(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	var ws []Write
	for i := range 20 {
		ws = append(ws, Write{
			Kind: KindStream, Group: "g", Name: "n", SeriesKey: fmt.Appendf(nil, "series-%d", i%4),
			Timestamp: int64(i) * 2 * int64(time.Hour), ElementID: fmt.Sprint(i), Value: fmt.Appendf(nil, "v%d", i),
		})
	}
	// Another name and another group must not leak into scans of g/n.
	ws = append(ws,
		Write{Kind: KindStream, Group: "g", Name: "n2", SeriesKey: []byte("series-0"), Timestamp: 0, ElementID: "x", Value: []byte("x")},
		Write{Kind: KindStream, Group: "g2", Name: "n", SeriesKey: []byte("series-0"), Timestamp: 0, ElementID: "y", Value: []byte("y")},
	)
	if err := db.Write(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(context.Background(), ws); err != nil { // idempotent
		t.Fatal(err)
	}
	if got := scanAll(t, db, KindStream, "g", "n", nil); len(got) != 20 {
		t.Fatalf("scan: %d items, want 20", len(got))
	}
	got := scanAll(t, db, KindStream, "g", "n", []byte("series-1"))
	var eids []string
	for _, it := range got {
		if !bytes.Equal(it.SeriesKey, []byte("series-1")) || !bytes.Equal(it.Payload, []byte("v"+string(it.ElementID))) {
			t.Errorf("bad item %+v", it)
		}
		eids = append(eids, string(it.ElementID))
	}
	if want := []string{"1", "5", "9", "13", "17"}; !slices.Equal(eids, want) {
		t.Errorf("series-1: %v, want %v", eids, want)
	}
	if segs := db.Segments(); len(segs) != 3 { // g: days 0 and 1 (0..38h); g2: day 0
		t.Errorf("segments: %v", segs)
	}
}

func TestInvalidWriteFailsBatch(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	err := db.Write(context.Background(), []Write{
		{Kind: KindStream, Group: "g", Name: "n", SeriesKey: []byte("s"), Value: []byte("v")},
		{Kind: KindStream, Group: "g", Name: "n", Value: []byte("v")},
	})
	if err == nil || !strings.Contains(err.Error(), "write 1") {
		t.Fatalf("got %v, want an error naming write 1", err)
	}
	if got := scanAll(t, db, KindStream, "g", "n", nil); len(got) != 0 {
		t.Errorf("a failed batch stored %d items", len(got))
	}
}

func TestMergerRejectsMalformed(t *testing.T) {
	if _, err := measureMerger.Merge(nil, []byte{9}); err == nil {
		t.Error("malformed operand accepted")
	}
	if _, err := measureMerger.Merge([]byte{byte(KindStream)}, []byte{9}); err == nil {
		t.Error("malformed stream operand accepted")
	}
	m, err := measureMerger.Merge([]byte{byte(KindMeasure)}, appendMeasureValue(nil, 5, []byte("s"), []byte("a")))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MergeOlder(appendMeasureValue(nil, 7, []byte("s"), []byte("b"))); err != nil {
		t.Fatal(err)
	}
	if err := m.MergeOlder(appendMeasureValue(nil, 7, []byte("s"), []byte("c"))); err != nil {
		t.Fatal(err)
	}
	v, _, _ := m.Finish(true)
	if _, _, payload, _ := parseMeasureValue(v); string(payload) != "b" {
		t.Errorf("merged payload %q, want b (newest of the highest version)", payload)
	}
}

func TestCloseWaitsForInFlight(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.acquire(); err != nil { // an operation in flight
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = db.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 operations still in flight") {
		t.Fatalf("close with an operation in flight: %v", err)
	}
	if err := db.Write(context.Background(), []Write{{Kind: KindStream, Group: "g", Name: "n", SeriesKey: []byte("s")}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write while closing: %v, want ErrClosed", err)
	}
	select {
	case <-db.Done():
		t.Fatal("closed Pebble under an operation in flight")
	default:
	}
	db.release() // the operation ends and closes Pebble
	<-db.Done()
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("close after drain: %v", err)
	}
}

func TestDropExpiredAndReopen(t *testing.T) {
	dir := t.TempDir()
	hourly := Options{SegmentInterval: func(g string) time.Duration {
		if g == "hourly" {
			return time.Hour
		}
		return 0
	}}
	db := openDB(t, dir, hourly)
	h := int64(time.Hour)
	var ws []Write
	for _, g := range []string{"hourly", "daily"} {
		for _, ts := range []int64{1 * h, 2 * h, 30 * h} {
			ws = append(ws, Write{Kind: KindMeasure, Group: g, Name: "m", SeriesKey: []byte("s"), Timestamp: ts, Value: []byte("v")})
		}
	}
	if err := db.Write(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 32*h)
	dropped, err := db.DropExpired(now, map[string]time.Duration{"hourly": 29 * time.Hour, "daily": 29 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// hourly: [1h,2h) and [2h,3h) end before now-29h = 3h; daily [0,24h) does not end before 3h.
	if len(dropped) != 2 {
		t.Fatalf("dropped %v, want the two old hourly segments", dropped)
	}
	if got := scanAll(t, db, KindMeasure, "hourly", "m", nil); len(got) != 1 || got[0].Timestamp != 30*h {
		t.Errorf("hourly after drop: %+v", got)
	}
	if got := scanAll(t, db, KindMeasure, "daily", "m", nil); len(got) != 3 {
		t.Errorf("daily after drop: %d items", len(got))
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir, hourly)
	if segs := db.Segments(); len(segs) != 3 {
		t.Errorf("segments after reopen: %v", segs)
	}
	if got := scanAll(t, db, KindMeasure, "hourly", "m", nil); len(got) != 1 {
		t.Errorf("hourly after reopen: %d items", len(got))
	}
}
