package tsdb

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
