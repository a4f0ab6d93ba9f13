package tsdb

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// openForCrash opens a DB that the test ends with crash (or Close) itself.
func openForCrash(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// crash stops db the way kill -9 would as far as the store can tell: the
// write buffer is not flushed, the log stays, Pebble keeps what it had.
func crash(t testing.TB, db *DB) {
	t.Helper()
	db.mu.Lock()
	db.closing = true
	db.mu.Unlock()
	close(db.stopFlusher)
	<-db.flusherDone
	db.wal.mu.Lock()
	_ = db.wal.f.Close()
	db.wal.err = errors.New("crashed")
	db.wal.mu.Unlock()
	if err := db.pdb.Close(); err != nil {
		t.Fatal(err)
	}
	db.closeOnce.Do(func() { close(db.closed) })
}

func streamWrite(series string, ts int64, eid, value string) Write {
	return Write{Kind: KindStream, Group: "g", Name: "n", SeriesKey: []byte(series), Timestamp: ts, ElementID: eid, Value: []byte(value)}
}

func measureWrite(series string, ts, version int64, value string) Write {
	return Write{Kind: KindMeasure, Group: "g", Name: "m", SeriesKey: []byte(series), Timestamp: ts, Version: version, Value: []byte(value)}
}

func payloads(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, string(it.Payload))
	}
	return out
}

func write(t testing.TB, db *DB, ws ...Write) {
	t.Helper()
	if err := db.Write(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
}

// Acked writes survive a crash before any flush: the log replays them.
func TestCrashBeforeFlushReplaysLog(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	write(t, db, streamWrite("a", 1, "1", "a1"), streamWrite("b", 2, "2", "b2"))
	write(t, db, streamWrite("a", 3, "3", "a3"), measureWrite("a", 1, 1, "m1"))
	crash(t, db)

	db = openDB(t, dir, Options{})
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"a1", "a3", "b2"}) &&
		!slices.Equal(got, []string{"b2", "a1", "a3"}) {
		t.Errorf("streams after replay: %v", got)
	}
	if got := payloads(scanAll(t, db, KindMeasure, "g", "m", nil)); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("measures after replay: %v", got)
	}
	if len(db.Segments()) != 2 {
		t.Errorf("segments after replay: %v", db.Segments())
	}
	// Replayed into Pebble, and the log is gone: a second crash loses nothing.
	if nums, _ := listWAL(db.walDir); len(nums) != 1 {
		t.Errorf("log files after replay: %v, want only the new one", nums)
	}
}

// A crash in the middle of a record leaves a torn tail: the records
// before it replay, the open succeeds.
func TestTornLogTailIsIgnored(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	write(t, db, streamWrite("a", 1, "1", "a1"))
	write(t, db, streamWrite("a", 2, "2", "a2"))
	path := filepath.Join(db.walDir, walName(db.wal.num))
	crash(t, db)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the second record short, with the next file already made, as
	// the flusher makes it ahead of a rotation.
	if err := os.Truncate(path, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), walName(db.wal.num+1)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir, Options{})
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("after a torn tail: %v, want [a1]", got)
	}
}

// A bad record in a log file that is not the newest cannot be a torn
// write: Open refuses rather than drop acknowledged writes.
func TestCorruptOlderLogFailsOpen(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	write(t, db, streamWrite("a", 1, "1", "a1"))
	old := filepath.Join(db.walDir, walName(db.wal.num))
	if _, err := db.wal.rotate(); err != nil { // a newer file follows
		t.Fatal(err)
	}
	write(t, db, streamWrite("a", 2, "2", "a2"))
	crash(t, db)
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(old, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "replay") {
		t.Fatalf("open with a corrupt older log: %v, want a replay error", err)
	}
}

// Reads see buffered writes, Pebble's, and both merged: for streams the
// newest write of a key, for measures the highest version.
func TestReadsMergeBufferAndPebble(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	write(t, db, streamWrite("a", 1, "1", "old"), streamWrite("a", 2, "2", "two"), measureWrite("a", 1, 5, "v5"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Now buffered: an overwrite, a new element, a lower and a higher version.
	write(t, db, streamWrite("a", 1, "1", "new"), streamWrite("a", 3, "3", "three"), measureWrite("a", 1, 4, "v4"), measureWrite("a", 2, 1, "p2"))
	check := func(when string) {
		t.Helper()
		if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"new", "two", "three"}) {
			t.Errorf("%s: streams %v, want [new two three]", when, got)
		}
		if got := payloads(scanAll(t, db, KindMeasure, "g", "m", nil)); !slices.Equal(got, []string{"v5", "p2"}) {
			t.Errorf("%s: measures %v, want [v5 p2]", when, got)
		}
		if got := payloads(scanAll(t, db, KindStream, "g", "n", []byte("a"))); len(got) != 3 {
			t.Errorf("%s: one-series scan %v", when, got)
		}
	}
	check("buffered")
	write(t, db, measureWrite("a", 1, 6, "v6"))
	if got := payloads(scanAll(t, db, KindMeasure, "g", "m", nil)); !slices.Equal(got, []string{"v6", "p2"}) {
		t.Errorf("higher version buffered: %v, want [v6 p2]", got)
	}
	write(t, db, measureWrite("a", 1, 5, "v5"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := payloads(scanAll(t, db, KindMeasure, "g", "m", nil)); !slices.Equal(got, []string{"v6", "p2"}) {
		t.Errorf("after flush: %v, want [v6 p2]", got)
	}
}

// Duplicates and late elements inside one buffer read back in key order,
// once each, the newest write winning.
func TestBufferOrdersLateAndRepeatedWrites(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	write(t, db, streamWrite("a", 5, "x", "5"), streamWrite("a", 3, "x", "3"), streamWrite("a", 5, "x", "5b"),
		streamWrite("a", 4, "x", "4"), streamWrite("a", 3, "x", "3b"))
	want := []string{"3b", "4", "5b"}
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, want) {
		t.Errorf("buffered: %v, want %v", got, want)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, want) {
		t.Errorf("flushed: %v, want %v", got, want)
	}
}

// Retention drops buffered data too, and a replay does not bring it back.
func TestDropExpiredReachesBufferAndLog(t *testing.T) {
	dir := t.TempDir()
	h := int64(time.Hour)
	hourly := Options{SegmentInterval: func(string) time.Duration { return time.Hour }}
	db := openForCrash(t, dir, hourly)
	write(t, db, streamWrite("a", 1*h, "1", "old"), streamWrite("a", 30*h, "2", "new"))
	dropped, err := db.DropExpired(time.Unix(0, 31*h), map[string]time.Duration{"g": 2 * time.Hour})
	if err != nil || len(dropped) != 1 {
		t.Fatalf("dropped %v, %v: want the 1h segment", dropped, err)
	}
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("after drop: %v", got)
	}
	crash(t, db)
	db = openDB(t, dir, hourly)
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("after replay: %v, want [new]", got)
	}
	if segs := db.Segments(); len(segs) != 1 || segs[0].Start != 30*h {
		t.Errorf("segments after replay: %v", segs)
	}
	// And what the replay wrote to Pebble holds no trace of it either.
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir, hourly)
	if segs := db.Segments(); len(segs) != 1 || segs[0].Start != 30*h {
		t.Errorf("segments after a second open: %v", segs)
	}
}

// With a small buffer, concurrent writers fill it many times over while
// readers scan: every acked write is readable, during and after, and the
// buffer was flushed (and writers held back) along the way.
func TestConcurrentWritesFlushesAndScans(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{BufferBytes: 64 << 10, NoSync: true})
	const writers, batches, perBatch = 4, 40, 50
	value := strings.Repeat("v", 100)
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	stop := make(chan struct{})
	go func() { // a reader: counts never go down
		defer close(errs)
		last := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := 0
			for _, seg := range db.SegmentsIn(KindStream, "g", 0, 1<<62) {
				if err := db.ScanSegment(context.Background(), seg, Scan{Name: "n", Begin: 0, End: 1 << 62}, func(*Item) error {
					n++
					return nil
				}); err != nil {
					errs <- err
					return
				}
			}
			if n < last {
				errs <- fmt.Errorf("scan saw %d records after %d", n, last)
				return
			}
			last = n
		}
	}()
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				ws := make([]Write, perBatch)
				for i := range ws {
					ws[i] = streamWrite(fmt.Sprintf("s%d", i%7), int64(b*perBatch+i), fmt.Sprintf("%d-%d-%d", w, b, i), value)
				}
				if err := db.Write(context.Background(), ws); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(scanAll(t, db, KindStream, "g", "n", nil)); got != writers*batches*perBatch {
		t.Errorf("read back %d records, want %d", got, writers*batches*perBatch)
	}
	if s := db.EngineStats(); s.Flushes < 5 {
		t.Errorf("%d flushes of a 64 KB buffer for ~1 MB of writes", s.Flushes)
	}
}

// A drop that comes while a flush builds its table must not be undone by
// the ingest that follows: the flush builds the table again.
func TestDropDuringFlushIsNotUndone(t *testing.T) {
	h := int64(time.Hour)
	hourly := Options{SegmentInterval: func(string) time.Duration { return time.Hour }}
	dir := t.TempDir()
	db := openDB(t, dir, hourly)
	write(t, db, streamWrite("a", 1*h, "1", "old"), streamWrite("a", 30*h, "2", "new"))
	builds := 0
	db.afterBuild = func() {
		if builds++; builds == 1 {
			if _, err := db.DropExpired(time.Unix(0, 31*h), map[string]time.Duration{"g": 2 * time.Hour}); err != nil {
				t.Error(err)
			}
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if builds != 2 {
		t.Errorf("built the table %d times, want 2 (again after the drop)", builds)
	}
	db.afterBuild = nil
	// Twice: the first open replays the drop from the log, which would
	// hide a segment the ingest brought back; the second has no log left.
	for range 2 {
		if err := db.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		db = openDB(t, dir, hourly)
	}
	if segs := db.Segments(); len(segs) != 1 || segs[0].Start != 30*h {
		t.Errorf("segments: %v, want only the 30h one", segs)
	}
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("after the flush: %v, want [new]", got)
	}
}

// A recycled log file still holds its previous records after the new
// ones: a replay must stop at them, not bring back writes since
// overwritten. The new file's one record is as long as the old file's
// first, so the stale second record starts right where the replay looks
// next.
func TestRecycledLogStaleRecordsNotReplayed(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	write(t, db, streamWrite("a", 4, "p", "p"))
	write(t, db, streamWrite("a", 1, "k", "v1"))
	if err := db.Flush(); err != nil { // its file becomes the spare
		t.Fatal(err)
	}
	write(t, db, streamWrite("a", 1, "k", "v2"))
	if err := db.Flush(); err != nil { // the next file is the spare, written over
		t.Fatal(err)
	}
	write(t, db, streamWrite("a", 4, "z", "z"))
	cur := filepath.Join(db.walDir, walName(db.wal.num))
	crash(t, db)
	b, err := os.ReadFile(cur)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "v1") {
		t.Fatal("the current log file does not hold the stale record: not the recycled one, the test proves nothing")
	}
	db = openDB(t, dir, Options{})
	got := map[string]string{}
	for _, it := range scanAll(t, db, KindStream, "g", "n", nil) {
		got[string(it.ElementID)] = string(it.Payload)
	}
	if got["k"] != "v2" || got["z"] != "z" || len(got) != 3 {
		t.Errorf("after replay: %v; want k=v2, p=p, z=z", got)
	}
}

// A scan reads buffered records in place. A flush that retires their
// buffer in the middle of the scan, and writes that follow it into
// recycled memory, must not change what the scan reads.
func TestScanKeepsRecordsAcrossFlush(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{})
	value := func(i int) string { return strings.Repeat(fmt.Sprintf("%06d", i), 40) }
	var ws []Write
	for i := range 2000 {
		ws = append(ws, streamWrite(fmt.Sprintf("s%d", i%10), int64(i), fmt.Sprint(i), value(i)))
	}
	write(t, db, ws...)
	seen, flushed := 0, false
	for _, seg := range db.SegmentsIn(KindStream, "g", 0, 1<<62) {
		err := db.ScanSegment(context.Background(), seg, Scan{Name: "n", Begin: 0, End: 1 << 62}, func(it *Item) error {
			if !flushed {
				flushed = true
				if err := db.Flush(); err != nil {
					return err
				}
				// Enough new writes to take every recycled chunk.
				for round := range 8 {
					var more []Write
					for i := range 2000 {
						more = append(more, streamWrite("other", int64(round*2000+i), fmt.Sprint(i), strings.Repeat("#", 240)))
					}
					if err := db.Write(context.Background(), more); err != nil {
						return err
					}
				}
			}
			if want := value(int(it.Timestamp)); string(it.Payload) != want {
				return fmt.Errorf("element %d read %.12q…, want %.12q…", it.Timestamp, it.Payload, want)
			}
			seen++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen != 2000 {
		t.Errorf("scan saw %d elements, want 2000", seen)
	}
}

// A writer waiting for room behind a flush that keeps failing gives up at
// its context's deadline, writes nothing, and loses nothing already
// acked; once the flush can run again, writes go through.
func TestWaitForRoomHonoursContext(t *testing.T) {
	db := openDB(t, t.TempDir(), Options{BufferBytes: 64 << 10, NoSync: true})
	// A file where the flush writes its tables: every flush fails, as on a
	// full or broken disk.
	if err := os.RemoveAll(db.ingestDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db.ingestDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 200)
	acked := 0
	var gaveUp error
	for b := 0; b < 200 && gaveUp == nil; b++ {
		ws := make([]Write, 50)
		for i := range ws {
			ws[i] = streamWrite("s", int64(b*50+i), fmt.Sprint(b*50+i), value)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := db.Write(ctx, ws)
		cancel()
		switch {
		case err == nil:
			acked += len(ws)
		case errors.Is(err, context.DeadlineExceeded):
			gaveUp = err
		default:
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	if gaveUp == nil {
		t.Fatalf("%d writes acked into a 64 KB buffer that cannot flush; want a writer to give up", acked)
	}
	if !strings.Contains(gaveUp.Error(), "room in the write buffer") {
		t.Errorf("error does not say what it waited for: %v", gaveUp)
	}
	// The wait is a write stall on the engine's metrics, as long as the
	// writer waited.
	if st := db.EngineStats(); st.WriteStalls < 1 || st.WriteStallTime < 250*time.Millisecond {
		t.Errorf("write stalls %d lasting %v after a writer waited 300ms for room", st.WriteStalls, st.WriteStallTime)
	}
	if got := len(scanAll(t, db, KindStream, "g", "n", nil)); got != acked {
		t.Fatalf("read %d records with the flush failing, want the %d acked", got, acked)
	}

	// The disk is back: the flusher's retry empties the buffer and a
	// writer that waits gets in.
	if err := os.Remove(db.ingestDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db.ingestDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.Write(ctx, []Write{streamWrite("s", 1<<40, "late", value)}); err != nil {
		t.Fatalf("write after the flush recovered: %v", err)
	}
	if got := len(scanAll(t, db, KindStream, "g", "n", nil)); got != acked+1 {
		t.Errorf("read %d records after recovery, want %d", got, acked+1)
	}
}

// Two writes of one key that reach the buffer in another order than
// their log records (concurrent writers) read back as the log has them:
// the later log record wins, as a replay would rebuild it.
func TestBufferOrdersOneKeyByLogRecord(t *testing.T) {
	for _, kind := range []Kind{KindStream, KindMeasure} {
		m := newMemBuffer()
		prefix := append([]byte{byte(kind), 'g'}, 0, 0, 0, 0, 0, 0, 0, 1) // name prefix + series hash
		suffix := []byte("ts-1")
		value := func(s string) []byte {
			if kind == KindMeasure { // equal versions: the later record wins
				return appendMeasureValue(nil, 0, []byte("series"), []byte(s))
			}
			return appendStreamValue(nil, 0, []byte("series"), []byte(s))
		}
		m.mu.Lock()
		m.putLocked(prefix, suffix, value("logged second"), 11)
		m.putLocked(prefix, suffix, value("logged first"), 10)
		m.mu.Unlock()
		sb := m.names[string(prefix[:len(prefix)-8])].series[1]
		sb.orderLocked()
		var got [][]byte
		if err := sb.eachRecord(kind, allVisible, func(_, v []byte) error { got = append(got, v); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !bytes.Equal(got[0], value("logged second")) {
			t.Errorf("%v: read %q, want the later log record's value", kind, got)
		}
	}
}

// A series' entries sort as a stable sort by (suffix, log record) would
// leave them: keys with a common 8-byte head and keys shorter than it,
// several writes of one key in one log record and in several, added
// mostly in order (the insertion sort) or in any order (its fallback).
func TestBufferOrderIsStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	suffixes := [][]byte{
		[]byte("ts-1"), []byte("ts-1\x00"), []byte("ts-2"),
		[]byte("\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("\x00\x00\x00\x00\x00\x00\x00\x01a"),
		[]byte("\x00\x00\x00\x00\x00\x00\x00\x01b"), []byte("\x00\x00\x00\x00\x00\x00\x00\x02"),
	}
	type put struct {
		suffix []byte
		value  string
		seq    uint64
	}
	for round := range 50 {
		m := newMemBuffer()
		prefix := []byte{byte(KindStream), 'g', 0, 0, 0, 0, 0, 0, 0, 1}
		var puts []put
		m.mu.Lock()
		for i := range 200 {
			k := rng.IntN(len(suffixes))
			if round%2 == 0 { // mostly in order, as concurrent writers add them
				k = min(i*len(suffixes)/200+rng.IntN(2), len(suffixes)-1)
			}
			p := put{suffixes[k], fmt.Sprint(i), uint64(10 + rng.IntN(3))}
			puts = append(puts, p)
			m.putLocked(prefix, p.suffix, []byte(p.value), p.seq)
			if i == 99 { // a scan sorts the first half: the rest joins sorted entries
				m.names[string(prefix[:len(prefix)-8])].series[1].orderLocked()
			}
		}
		m.mu.Unlock()
		slices.SortStableFunc(puts, func(x, y put) int {
			if c := bytes.Compare(x.suffix, y.suffix); c != 0 {
				return c
			}
			return cmp.Compare(x.seq, y.seq)
		})
		sb := m.names[string(prefix[:len(prefix)-8])].series[1]
		sb.orderLocked()
		for i, e := range sb.entries {
			if !bytes.Equal(e.suffix(sb.arena), puts[i].suffix) || string(e.value(sb.arena)) != puts[i].value {
				t.Fatalf("round %d entry %d: %q %q, a stable sort has %q %q", round, i, e.suffix(sb.arena), e.value(sb.arena), puts[i].suffix, puts[i].value)
			}
		}
	}
}
