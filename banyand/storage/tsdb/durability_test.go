package tsdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// waitMax bounds a wait that only a broken store makes long.
const waitMax = 20 * time.Second

// heldSync is a log sync a test holds: once armed, the next sync of a
// log file tells entered and waits for release before it syncs.
type heldSync struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldSync(t *testing.T) *heldSync {
	h := &heldSync{entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(h.let) // before the DB's Close, registered earlier
	return h
}

func (h *heldSync) file(f *os.File) error {
	if h.armed.CompareAndSwap(true, false) {
		h.entered <- struct{}{}
		<-h.release
	}
	return syncData(f)
}

func (h *heldSync) let() { h.once.Do(func() { close(h.release) }) }

// A write is readable only once the log sync that makes it durable has
// returned. A reader that saw it earlier would see a value that a crash
// before the sync loses, and that no client was ever acked for.
func TestWriteInvisibleUntilItsSyncReturns(t *testing.T) {
	held := newHeldSync(t)
	db := openDB(t, t.TempDir(), Options{syncs: syncer{file: held.file}})
	write(t, db, streamWrite("a", 1, "1", "synced"), measureWrite("a", 1, 1, "m-synced"))

	held.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- db.Write(context.Background(), []Write{streamWrite("a", 2, "2", "held"), measureWrite("a", 2, 1, "m-held")})
	}()
	select {
	case <-held.entered:
	case <-time.After(waitMax):
		t.Fatal("the write never reached its log sync")
	}
	// The write is in the log and the buffer; its sync has not returned.
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"synced"}) {
		t.Errorf("streams during the sync: %v, want [synced]", got)
	}
	if got := payloads(scanAll(t, db, KindStream, "g", "n", []byte("a"))); !slices.Equal(got, []string{"synced"}) {
		t.Errorf("one-series scan during the sync: %v, want [synced]", got)
	}
	if got := payloads(scanAll(t, db, KindMeasure, "g", "m", nil)); !slices.Equal(got, []string{"m-synced"}) {
		t.Errorf("measures during the sync: %v, want [m-synced]", got)
	}
	select {
	case err := <-done:
		t.Fatalf("Write returned before its sync: %v", err)
	default:
	}

	held.let()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"synced", "held"}) {
		t.Errorf("streams once acked: %v, want [synced held]", got)
	}
	if got := payloads(scanAll(t, db, KindMeasure, "g", "m", nil)); !slices.Equal(got, []string{"m-synced", "m-held"}) {
		t.Errorf("measures once acked: %v, want [m-synced m-held]", got)
	}
}

// keysUnder returns the keys Pebble holds under prefix.
func keysUnder(t *testing.T, db *DB, prefix []byte) [][]byte {
	t.Helper()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for valid := it.First(); valid; valid = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// A crash between the steps of a drop, or after them, converges: once
// retention runs again after the restart, nothing of the dropped segment
// is left, in Pebble or in the buffer, and a late write into its range
// reads back alone, without the expired data it would share keys with.
func TestDropExpiredCrashBetweenStepsConverges(t *testing.T) {
	h := int64(time.Hour)
	hourly := Options{SegmentInterval: func(string) time.Duration { return time.Hour }}
	now, ttl := time.Unix(0, 31*h), map[string]time.Duration{"g": 2 * time.Hour}
	errCrash := errors.New("crashed here")
	for _, step := range []int{1, 2} {
		t.Run(fmt.Sprintf("after step %d", step), func(t *testing.T) {
			dir := t.TempDir()
			db := openForCrash(t, dir, hourly)
			write(t, db, streamWrite("a", 1*h, "1", "old-flushed"), streamWrite("a", 30*h, "2", "new"))
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			write(t, db, streamWrite("a", 1*h+1, "3", "old-buffered"))
			db.afterDropStep = func(s int) error {
				if s == step {
					return errCrash
				}
				return nil
			}
			if _, err := db.DropExpired(now, ttl); !errors.Is(err, errCrash) {
				t.Fatalf("drop stopped after step %d: %v", step, err)
			}
			crash(t, db)

			db = openDB(t, dir, hourly)
			// After the range deletion only the log's copy of the
			// buffered record is left: the replay brings it back with its
			// segment, expired, and retention drops it again.
			again, err := db.DropExpired(now, ttl)
			if err != nil {
				t.Fatal(err)
			}
			if wantAgain := map[int]int{1: 1, 2: 0}[step]; len(again) != wantAgain {
				t.Errorf("retention after the restart dropped %v, want %d segments", again, wantAgain)
			}
			if segs := db.Segments(); len(segs) != 1 || segs[0].Start != 30*h {
				t.Errorf("segments after retention ran again: %v, want only the 30h one", segs)
			}
			if keys := keysUnder(t, db, segmentPrefix(nil, KindStream, "g", 1*h)); len(keys) > 0 {
				t.Errorf("Pebble still holds %d records of the dropped segment", len(keys))
			}
			if keys := keysUnder(t, db, segmentMetaKey(nil, KindStream, "g", 1*h)); len(keys) > 0 {
				t.Errorf("Pebble still holds the dropped segment's record")
			}
			write(t, db, streamWrite("a", 1*h+2, "4", "late"))
			if got := payloads(scanAll(t, db, KindStream, "g", "n", nil)); !slices.Equal(got, []string{"late", "new"}) {
				t.Errorf("after a late write into the dropped range: %v, want [late new]", got)
			}
		})
	}
}

// dirSyncs records the directories a store syncs.
type dirSyncs struct {
	mu   sync.Mutex
	dirs []string
}

func (d *dirSyncs) dir(path string) error {
	d.mu.Lock()
	d.dirs = append(d.dirs, path)
	d.mu.Unlock()
	return syncDir(path)
}

func (d *dirSyncs) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dirs)
}

// mkdirDurable syncs the parent of every directory it makes, up to the
// closest one that was there, and the parent of its target even when the
// target was there already.
func TestMkdirDurableSyncsTheParents(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"made with two parents", []string{filepath.Join(root, "a", "b"), filepath.Join(root, "a"), root}},
		{"there already", []string{filepath.Join(root, "a", "b")}},
	} {
		rec := &dirSyncs{}
		if err := mkdirDurable(deep, syncer{dir: rec.dir}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(deep); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %s not a directory: %v", tc.name, deep, err)
		}
		if got := rec.got(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: synced %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Open makes the data directory (with its missing parents), write-log/
// and ingest/ durable before it takes a write: the parent of each is
// synced after it is made, and write-log/ after its first file is.
func TestOpenSyncsTheDirectoriesItMakes(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data", "storage")
	rec := &dirSyncs{}
	db := openDB(t, dir, Options{syncs: syncer{dir: rec.dir}})
	got := rec.got()
	for _, want := range []string{
		root,              // data/ made in it
		filepath.Dir(dir), // storage/ made in it
		dir,               // write-log/ and ingest/ made in it
		db.walDir,         // the first log file made in it
	} {
		if !slices.Contains(got, want) {
			t.Errorf("Open synced %v: not %s", got, want)
		}
	}
	// Each before the directory below it is synced: its entry is durable
	// by the time anything in it is.
	if i, j := slices.Index(got, dir), slices.Index(got, db.walDir); i > j {
		t.Errorf("synced %v: the log's directory before its parent", got)
	}
}
