package tsdb

import (
	"context"
	"slices"
	"testing"
	"time"
)

func propertyWrite(id string, revision int64, value string) Write {
	return Write{Kind: KindProperty, Group: "g", Name: "p", SeriesKey: []byte("p/" + id), ElementID: id, Version: revision, Value: []byte(value)}
}

// Of the writes of one property the highest revision is read back, in
// whatever order they were written, from the write buffer, after a
// crash (the log replayed), after a flush (Pebble's merge), and retention
// never drops properties.
func TestPropertyHighestRevisionWins(t *testing.T) {
	dir := t.TempDir()
	db := openForCrash(t, dir, Options{})
	write(t, db, propertyWrite("a", 20, "a@20"), propertyWrite("b", 5, "b@5"))
	write(t, db, propertyWrite("a", 10, "a@10")) // a straggler: older revision
	write(t, db, propertyWrite("b", 7, "b@7"))
	check := func(stage string, db *DB) {
		t.Helper()
		got := payloads(scanAll(t, db, KindProperty, "g", "p", nil))
		if want := []string{"a@20", "b@7"}; !slices.Equal(sortedCopy(got), want) {
			t.Fatalf("%s: read %v, want %v", stage, got, want)
		}
		one := scanAll(t, db, KindProperty, "g", "p", []byte("p/a"))
		if len(one) != 1 || string(one[0].ElementID) != "a" || one[0].Version != 20 {
			t.Fatalf("%s: property a read as %+v", stage, one)
		}
	}
	check("buffered", db)
	crash(t, db)

	db = openDB(t, dir, Options{})
	check("replayed", db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	write(t, db, propertyWrite("a", 15, "a@15")) // older than Pebble's
	check("flushed", db)
	dropped, err := db.DropExpired(time.Now(), map[string]time.Duration{"g": time.Hour})
	if err != nil || len(dropped) != 0 {
		t.Fatalf("retention dropped %v (%v): properties have no TTL", dropped, err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("merged in Pebble", db)
	_ = db.Close(context.Background())
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
