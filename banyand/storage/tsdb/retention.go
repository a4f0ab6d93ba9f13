package tsdb

import (
	"fmt"
	"time"
)

// DropExpired deletes every segment whose whole time range ends at or
// before now minus its group's TTL. Groups absent from ttlByGroup, or with a
// TTL <= 0, keep everything. All drops are one synced batch of range
// deletions: Pebble drops covered files without rewriting them, so the cost
// does not grow with the data dropped. It returns the segments dropped.
//
// A write that arrives later for a dropped time range creates a new segment;
// the next call drops it again.
//
// A crash at any point converges. The range deletions and the segment
// records' deletions commit first, then the drop is logged and taken out
// of the write buffers: a crash before the commit leaves the segment
// whole, and one after it leaves at most the log's copies of its records,
// which a replay brings back with their segment record, so the next call
// drops them again. Logging the drop first would let a replay forget a
// segment whose data Pebble still holds: nothing would delete it again,
// and a late write into its range would read it back.
func (db *DB) DropExpired(now time.Time, ttlByGroup map[string]time.Duration) ([]Segment, error) {
	if err := db.acquire(); err != nil {
		return nil, err
	}
	defer db.release()

	// Writers hold this for reading from segment choice to commit; waiting
	// for it means no write is about to commit into a segment we drop. The
	// flusher holds it for reading to ingest, so nothing it ingests comes
	// between the steps below.
	db.retention.Lock()
	defer db.retention.Unlock()

	expired := db.segs.expired(now, ttlByGroup)
	if len(expired) == 0 {
		return nil, nil
	}
	db.drops.Add(1) // a flush building a table now builds it again
	b := db.pdb.NewBatch()
	defer func() { _ = b.Close() }()
	var rec []byte // the drop's log record
	for _, s := range expired {
		start := segmentPrefix(nil, s.Kind, s.Group, s.Start)
		meta := segmentMetaKey(nil, s.Kind, s.Group, s.Start)
		if err := b.DeleteRange(start, prefixEnd(start), nil); err != nil {
			return nil, fmt.Errorf("tsdb: drop %v: %w", s, err)
		}
		if err := b.Delete(meta, nil); err != nil {
			return nil, fmt.Errorf("tsdb: drop %v: %w", s, err)
		}
		rec = append(rec, opDrop)
		rec = appendBytesLP(rec, start)
		rec = appendBytesLP(rec, meta)
	}
	if err := b.Commit(db.writeOpt); err != nil {
		return nil, fmt.Errorf("tsdb: drop %d expired segments: %w", len(expired), err)
	}
	if err := db.dropStepDone(1); err != nil {
		return nil, err
	}
	// Logged so that a replay removes the log's copies of their records.
	if err := db.logAndBuffer(rec, true); err != nil {
		return nil, fmt.Errorf("tsdb: drop %d expired segments: %w", len(expired), err)
	}
	if err := db.dropStepDone(2); err != nil {
		return nil, err
	}
	for _, s := range expired {
		db.segs.remove(s)
	}
	db.specs.clear()
	db.log.Info("dropped expired segments", "count", len(expired))
	return expired, nil
}

func (db *DB) dropStepDone(step int) error {
	if db.afterDropStep == nil {
		return nil
	}
	return db.afterDropStep(step)
}

func (s Segment) String() string {
	return fmt.Sprintf("%v/%s[%s, %s)", s.Kind, s.Group,
		time.Unix(0, s.Start).UTC().Format(time.RFC3339), time.Unix(0, s.End).UTC().Format(time.RFC3339))
}
