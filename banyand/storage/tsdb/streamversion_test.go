package tsdb

import (
	"context"
	"slices"
	"testing"
)

func versionedStreamWrite(eid string, version int64, value string) Write {
	w := streamWrite("svc-1", 1000, eid, value)
	w.Version = version
	return w
}

// Of the writes of one stream element the highest version is read back
// (the newest among equals, and a write without a version counts as 0),
// in whatever order they reached the node: a copy handed off or
// re-placed late never hides a later write. From the write buffer, after
// a crash (the log replayed) and after a flush (Pebble's merge).
func TestStreamElementHighestVersionWins(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	write(t, db, versionedStreamWrite("a", 20, "a@20"), versionedStreamWrite("b", 5, "b@5"), streamWrite("svc-1", 1000, "c", "c@0"))
	write(t, db, versionedStreamWrite("a", 10, "a@10")) // a straggler: an older version
	write(t, db, versionedStreamWrite("b", 7, "b@7"), versionedStreamWrite("c", 3, "c@3"))
	check := func(stage string, db *DB) {
		t.Helper()
		got := payloads(scanAll(t, db, KindStream, "g", "n", nil))
		if want := []string{"a@20", "b@7", "c@3"}; !slices.Equal(sortedCopy(got), want) {
			t.Fatalf("%s: read %v, want %v", stage, got, want)
		}
	}
	check("buffered", db)
	crash(t, db)

	db = openDB(t, dir, Options{})
	check("replayed", db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	write(t, db, versionedStreamWrite("a", 15, "a@15")) // older than Pebble's
	check("flushed", db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("merged in Pebble", db)
	write(t, db, versionedStreamWrite("a", 20, "a@20 again")) // a redelivery: equal versions, the newer wins
	check2 := payloads(scanAll(t, db, KindStream, "g", "n", nil))
	if !slices.Contains(check2, "a@20 again") {
		t.Fatalf("a redelivery of the same version did not replace it: %v", check2)
	}
	_ = db.Close(context.Background())
}
