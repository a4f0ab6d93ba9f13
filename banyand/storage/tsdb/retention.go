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
func (db *DB) DropExpired(now time.Time, ttlByGroup map[string]time.Duration) ([]Segment, error) {
	if err := db.acquire(); err != nil {
		return nil, err
	}
	defer db.release()

	// Writers hold this for reading from segment choice to commit; waiting
	// for it means no write is about to commit into a segment we drop.
	db.retention.Lock()
	defer db.retention.Unlock()

	expired := db.segs.expired(now, ttlByGroup)
	if len(expired) == 0 {
		return nil, nil
	}
	db.drops.Add(1) // a flush building a table now builds it again
	b := db.pdb.NewBatch()
	defer func() { _ = b.Close() }()
	for _, s := range expired {
		start := segmentPrefix(nil, s.Kind, s.Group, s.Start)
		if err := b.DeleteRange(start, prefixEnd(start), nil); err != nil {
			return nil, fmt.Errorf("tsdb: drop %v: %w", s, err)
		}
		if err := b.Delete(segmentMetaKey(nil, s.Kind, s.Group, s.Start), nil); err != nil {
			return nil, fmt.Errorf("tsdb: drop %v: %w", s, err)
		}
	}
	// Logged first, so a replay removes what the log holds of them too,
	// then out of the buffers, then out of Pebble.
	var rec []byte
	for _, s := range expired {
		rec = append(rec, opDrop)
		rec = appendBytesLP(rec, segmentPrefix(nil, s.Kind, s.Group, s.Start))
		rec = appendBytesLP(rec, segmentMetaKey(nil, s.Kind, s.Group, s.Start))
	}
	if err := db.logAndBuffer(rec, true); err != nil {
		return nil, fmt.Errorf("tsdb: drop %d expired segments: %w", len(expired), err)
	}
	if err := b.Commit(db.writeOpt); err != nil {
		return nil, fmt.Errorf("tsdb: drop %d expired segments: %w", len(expired), err)
	}
	for _, s := range expired {
		db.segs.remove(s)
	}
	db.log.Info("dropped expired segments", "count", len(expired))
	return expired, nil
}

func (s Segment) String() string {
	return fmt.Sprintf("%v/%s[%s, %s)", s.Kind, s.Group,
		time.Unix(0, s.Start).UTC().Format(time.RFC3339), time.Unix(0, s.End).UTC().Format(time.RFC3339))
}
