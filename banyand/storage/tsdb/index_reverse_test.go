package tsdb

import (
	"context"
	"slices"
	"testing"
)

// A reverse scan of a series reads what a forward one reads, backwards,
// from the buffers, Pebble and both, with the later write of a key.
func TestScanSeriesReverseMirrorsScan(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	ctx := context.Background()
	write := func(ts int64, id, v string) {
		t.Helper()
		if err := db.Write(ctx, []Write{
			{Kind: KindStream, Group: "g", Name: "n", SeriesKey: []byte("s"), Timestamp: ts, ElementID: id, Value: []byte(v)},
			{Kind: KindStream, Group: "g", Name: "n", SeriesKey: []byte("other"), Timestamp: ts, ElementID: id, Value: []byte("x")},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		write(int64(i*10), "a", "old")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if i%3 == 0 {
			write(int64(i*10), "a", "new") // the same key, in the buffer
		}
		write(int64(i*10+5), "b", "buf")
	}
	segs := db.SegmentsIn(KindStream, "g", 0, 1000)
	if len(segs) != 1 {
		t.Fatalf("%d segments", len(segs))
	}
	read := func(reverse bool) []string {
		var out []string
		sc := Scan{Name: "n", Begin: 10, End: 95, SeriesKey: []byte("s")}
		fn := func(it *Item) error {
			out = append(out, string(rune('0'+it.Timestamp/10))+string(it.ElementID)+"="+string(it.Payload))
			return nil
		}
		var err error
		if reverse {
			err = db.ScanSeriesReverse(ctx, segs[0], sc, fn)
		} else {
			err = db.ScanSegment(ctx, segs[0], sc, fn)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	fwd, rev := read(false), read(true)
	slices.Reverse(rev)
	if len(fwd) != 17 || !slices.Equal(fwd, rev) {
		t.Errorf("forward %v\nreverse reversed %v", fwd, rev)
	}
	if !slices.Contains(fwd, "3a=new") || slices.Contains(fwd, "3a=old") {
		t.Errorf("the later write of a key not read: %v", fwd)
	}
}
