package tsdb

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Write is one stream element or measure data point to store.
type Write struct {
	Kind      Kind
	Group     string
	Name      string
	SeriesKey []byte
	// Timestamp is Unix nanoseconds.
	Timestamp int64
	// ElementID identifies a stream element within its series and
	// timestamp. Ignored for measures.
	ElementID string
	// Version orders writes of the same measure data point: the highest
	// wins, and a later write wins a tie. Ignored for streams.
	Version int64
	// Value is the marshalled ElementValue or DataPointValue, stored as is.
	Value []byte
}

// Validate reports a write that cannot be stored. Callers validate each
// write before batching, so that one bad write fails alone.
func (w *Write) Validate() error {
	switch {
	case w.Kind != KindStream && w.Kind != KindMeasure:
		return fmt.Errorf("tsdb: unknown kind %v", w.Kind)
	case w.Group == "":
		return errors.New("tsdb: empty group")
	case w.Name == "":
		return errors.New("tsdb: empty name")
	case len(w.SeriesKey) == 0:
		return errors.New("tsdb: empty series key")
	}
	return nil
}

// Write stores ws as one Pebble batch, committed with one synced write
// (Pebble's commit pipeline shares the fsync among batches committed
// concurrently). It returns once the batch is durable, or with an error and
// nothing written. A write repeated with the same key (stream: group, name,
// series, timestamp, element id; measure: group, name, series, timestamp)
// replaces the earlier one; for measures the higher version wins (see
// measureMerger).
func (db *DB) Write(ws []Write) error {
	if len(ws) == 0 {
		return nil
	}
	for i := range ws {
		if err := ws[i].Validate(); err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
	}
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()

	size := 0
	for i := range ws {
		size += len(ws[i].Value) + len(ws[i].SeriesKey)*2 + len(ws[i].Group) + len(ws[i].Name) + len(ws[i].ElementID) + 48
	}
	b := db.pdb.NewBatchWithSize(size)
	defer func() { _ = b.Close() }()

	// Held from segment choice to commit: see DB.retention.
	db.retention.RLock()
	defer db.retention.RUnlock()

	var (
		key, hdr  []byte
		lastGroup string
		interval  time.Duration
		touched   = make(map[Segment]struct{}, 1)
	)
	for i := range ws {
		w := &ws[i]
		if w.Group != lastGroup || interval == 0 {
			lastGroup, interval = w.Group, db.segmentInterval(w.Group)
		}
		seg := db.segs.assign(w.Kind, w.Group, w.Timestamp, interval)
		touched[seg] = struct{}{}
		key = namePrefix(key[:0], w.Kind, w.Group, seg.Start, w.Name)
		var op *pebble.DeferredBatchOp
		if w.Kind == KindStream {
			key = dataKey(key, SeriesHash(w.SeriesKey), w.Timestamp, w.ElementID)
			hdr = appendStreamValue(hdr[:0], w.SeriesKey, nil)
			op = b.SetDeferred(len(key), len(hdr)+len(w.Value))
		} else {
			key = dataKey(key, SeriesHash(w.SeriesKey), w.Timestamp, "")
			hdr = appendMeasureValue(hdr[:0], w.Version, w.SeriesKey, nil)
			op = b.MergeDeferred(len(key), len(hdr)+len(w.Value))
		}
		copy(op.Key, key)
		copy(op.Value[copy(op.Value, hdr):], w.Value)
		if err := op.Finish(); err != nil {
			return fmt.Errorf("tsdb: build batch: %w", err)
		}
	}
	// Segment records ride along with every batch that touches a segment,
	// so a committed write's segment is always on disk too.
	for seg := range touched {
		key = segmentMetaKey(key[:0], seg.Kind, seg.Group, seg.Start)
		if err := b.Set(key, appendInt64(hdr[:0], seg.End), nil); err != nil {
			return fmt.Errorf("tsdb: build batch: %w", err)
		}
	}
	if err := b.Commit(db.writeOpt); err != nil {
		return fmt.Errorf("tsdb: commit batch of %d writes: %w", len(ws), err)
	}
	return nil
}
