package tsdb

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// After writes and a flush the engine stats show the WAL, the flush and
// the data on disk; after Close they still read, with the last values.
func TestEngineStatsAfterFlush(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	value := bytes.Repeat([]byte("v"), 1024)
	for batch := range 10 {
		ws := make([]Write, 100)
		for i := range ws {
			ws[i] = Write{Kind: KindStream, Group: "g", Name: "n", SeriesKey: fmt.Appendf(nil, "s%d", i%7),
				Timestamp: int64(batch*100 + i), ElementID: fmt.Sprint(i), Value: value}
		}
		if err := db.Write(context.Background(), ws); err != nil {
			t.Fatal(err)
		}
	}
	before := db.EngineStats()
	// The write buffer flushes at 64 MB: a test-sized load would never fill it.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	s := db.EngineStats()
	if s.WALBytesWritten == 0 || s.WALBytesIn == 0 {
		t.Errorf("WAL bytes in %d, written %d: want > 0", s.WALBytesIn, s.WALBytesWritten)
	}
	if s.Flushes < 1 || s.FlushBytes == 0 {
		t.Errorf("flushes %d, flush bytes %d: want a flush that wrote bytes", s.Flushes, s.FlushBytes)
	}
	if s.MemTableBytes >= before.MemTableBytes {
		t.Errorf("memtable and buffer bytes %d after the flush, %d before: want fewer", s.MemTableBytes, before.MemTableBytes)
	}
	if s.DiskBytes == 0 {
		t.Error("disk bytes 0")
	}
	if s.WriteAmp < 1 {
		t.Errorf("write amplification %v, want >= 1 (the WAL alone is 1)", s.WriteAmp)
	}

	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := db.EngineStats(); after != s {
		t.Errorf("stats after Close: %+v, want the last read %+v", after, s)
	}
}

// A closed DB whose stats were never read reports zeros, not a panic.
func TestEngineStatsClosedNeverRead(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := db.EngineStats(); s != (EngineStats{}) {
		t.Errorf("stats of a closed DB: %+v, want zero", s)
	}
}

// Write stalls are counted, timed and logged at Warn through the event
// listener Open installs. Making Pebble stall for real takes gigabytes of
// writes, so the test calls the listener as Pebble does.
func TestWriteStallsCountedAndLogged(t *testing.T) {
	var logs bytes.Buffer
	db := openDB(t, t.TempDir(), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	l := db.stalls.listener()
	for range 2 {
		l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
		l.WriteStallEnd()
	}
	s := db.EngineStats()
	if s.WriteStalls != 2 || s.WriteStallTime <= 0 {
		t.Errorf("write stalls %d, time %v: want 2 and > 0", s.WriteStalls, s.WriteStallTime)
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 4 || !strings.Contains(out, `reason="memtable count limit reached"`) ||
		!strings.Contains(out, "duration=") {
		t.Errorf("stall logs: %q", out)
	}
}
