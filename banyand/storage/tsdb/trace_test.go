package tsdb

import (
	"context"
	"slices"
	"testing"
	"time"
)

func spanWrite(trace, span string, ts, version int64, value string) Write {
	return Write{Kind: KindTrace, Group: "g", Name: "t", SeriesKey: []byte("t/" + trace), Timestamp: ts, ElementID: span, Version: version, Value: []byte(value)}
}

// A span is one record per (trace, timestamp, span id): a redelivered
// span never duplicates, and of two writes of one span the higher version
// is read back, in whatever order they came, from the buffer, after a
// crash (the log replayed) and from Pebble (the merge operator); spans
// of another trace stay apart; retention drops trace segments like
// stream ones.
func TestTraceSpanKeysAndVersionRule(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	ts := time.Now().Truncate(time.Millisecond).UnixNano()
	write(t, db, spanWrite("T1", "s1", ts, 2, "s1@2"), spanWrite("T1", "s2", ts+1e6, 1, "s2@1"), spanWrite("T2", "s1", ts, 1, "T2s1@1"))
	write(t, db, spanWrite("T1", "s1", ts, 2, "s1@2"))     // redelivered
	write(t, db, spanWrite("T1", "s1", ts, 1, "s1@1"))     // a straggler
	write(t, db, spanWrite("T1", "s2", ts+1e6, 3, "s2@3")) // a newer version
	check := func(stage string, db *DB) {
		t.Helper()
		got := payloads(scanAll(t, db, KindTrace, "g", "t", []byte("t/T1")))
		if want := []string{"s1@2", "s2@3"}; !slices.Equal(sortedCopy(got), want) {
			t.Fatalf("%s: trace T1 read %v, want %v", stage, got, want)
		}
		if all := scanAll(t, db, KindTrace, "g", "t", nil); len(all) != 3 {
			t.Fatalf("%s: %d spans in all, want 3", stage, len(all))
		}
	}
	check("buffered", db)
	crash(t, db)

	db = openDB(t, dir, Options{})
	check("replayed", db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	write(t, db, spanWrite("T1", "s2", ts+1e6, 2, "s2@2")) // older than Pebble's
	check("flushed", db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("merged in Pebble", db)
	dropped, err := db.DropExpired(time.Unix(0, ts).Add(30*24*time.Hour), map[string]time.Duration{"g": time.Hour})
	if err != nil || len(dropped) == 0 {
		t.Fatalf("retention dropped %v (%v), want the trace segment", dropped, err)
	}
	if all := scanAll(t, db, KindTrace, "g", "t", nil); len(all) != 0 {
		t.Fatalf("%d spans after retention, want 0", len(all))
	}
	_ = db.Close(context.Background())
}
