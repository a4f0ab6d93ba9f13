package tsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Write is one stream element or measure data point to store.
type Write struct {
	Kind      Kind
	Group     string
	Name      string
	SeriesKey []byte
	// Timestamp is Unix nanoseconds.
	Timestamp int64
	// ElementID identifies a stream element (or a property) within its series and
	// timestamp. Ignored for measures.
	ElementID string
	// Version orders writes of the same measure data point: the highest
	// wins, and a later write wins a tie. A stream element's is stored and
	// returned (it orders copies on different nodes); on one node the
	// later write of an element wins.
	Version int64
	// Value is the marshalled ElementValue or DataPointValue, stored as is.
	Value []byte
	// Index holds the write's tag index records (streams, measures and
	// the spans' time index; see IndexName).
	Index IndexEntries
}

// Validate reports a write that cannot be stored. Callers validate each
// write before batching, so that one bad write fails alone.
func (w *Write) Validate() error {
	switch {
	case w.Kind < KindStream || w.Kind > KindTraceTime:
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

// Write stores ws and returns once they are durable, or with an error and
// nothing acknowledged. The batch is one record of the write-ahead log
// (concurrent batches share one fdatasync) and goes into the write buffer,
// which a flush writes to Pebble later (docs/design/write-buffer.md). A
// write repeated with the same key (stream: group, name, series,
// timestamp, element id; measure: group, name, series, timestamp)
// replaces the earlier one; for measures the higher version wins (see
// measureMerger).
//
// ctx bounds only the wait for room in the write buffer (a flush that
// cannot keep up or keeps failing): past it, Write returns ctx's error
// and writes nothing. Once the batch is in the log, Write waits for it to
// be durable whatever ctx says, so that it never reports a failure for a
// batch a restart would replay.
func (db *DB) Write(ctx context.Context, ws []Write) error {
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
	// Before the retention lock: a flush needs it to make room.
	if err := db.waitForRoom(ctx); err != nil {
		return err
	}

	// Held from segment choice to durable: see DB.retention.
	db.retention.RLock()
	defer db.retention.RUnlock()

	rp := recordPool.Get().(*[]byte)
	defer recordPool.Put(rp)
	rec := db.appendWriteRecord((*rp)[:0], ws)
	*rp = rec

	if err := db.logAndBuffer(rec, false); err != nil {
		// Its spec records may not be in the log: log them again.
		db.specs.clear()
		return fmt.Errorf("tsdb: write batch of %d: %w", len(ws), err)
	}
	return nil
}

// logAndBuffer appends rec to the log, applies it to the mutable buffer
// (and to a sealed one not yet in Pebble too, if toSealed: drops must
// reach it), and returns once rec is durable. Scans see rec's records
// only from then on (see memBuffer): applying it before the sync keeps
// the buffer in log order without waiting for the sync to add.
func (db *DB) logAndBuffer(rec []byte, toSealed bool) error {
	db.bufMu.RLock()
	seq, err := db.wal.append(rec)
	if err == nil {
		err = db.mem.applyOps(rec, seq, nil)
	}
	if err == nil && toSealed && db.imm != nil {
		err = db.imm.applyOps(rec, seq, nil)
	}
	full := db.mem.size() >= db.bufferBytes
	db.bufMu.RUnlock()
	if err != nil {
		return err
	}
	if full {
		db.kickFlusher()
	}
	return db.wal.wait(seq)
}

// recordPool recycles the log records Write builds (about the size of a
// batch).
var recordPool = sync.Pool{New: func() any { return new([]byte) }}

// appendWriteRecord appends the log record of ws: each touched segment's
// record, so that it reaches Pebble with the data, then one put per write.
func (db *DB) appendWriteRecord(rec []byte, ws []Write) []byte {
	var (
		key, hdr  []byte
		lastGroup string
		interval  time.Duration
		segs      [4]Segment
		touched   = segs[:0]
		lastSpec  specKey
	)
	start := len(rec)
	for i := range ws {
		w := &ws[i]
		if w.Group != lastGroup || interval == 0 {
			lastGroup, interval = w.Group, db.segmentInterval(w.Group)
		}
		seg := db.segs.assign(w.Kind, w.Group, w.Timestamp, interval)
		if !slices.Contains(touched, seg) {
			touched = append(touched, seg)
		}
		key = namePrefix(key[:0], w.Kind, w.Group, seg.Start, w.Name)
		key = binary.BigEndian.AppendUint64(key, SeriesHash(w.SeriesKey))
		if w.Kind == KindStream {
			hdr = appendStreamValue(hdr[:0], w.Version, w.SeriesKey, nil)
		} else {
			hdr = appendMeasureValue(hdr[:0], w.Version, w.SeriesKey, nil)
		}
		rec = append(rec, opPut)
		rec = appendBytesLP(rec, key)
		eid := w.ElementID
		if w.Kind == KindMeasure {
			eid = ""
		}
		rec = binary.AppendUvarint(rec, uint64(8+len(eid)))
		rec = append(appendInt64(rec, w.Timestamp), eid...)
		rec = binary.AppendUvarint(rec, uint64(len(hdr)+len(w.Value)))
		rec = append(append(rec, hdr...), w.Value...)
		if w.Kind.indexed() {
			rec = db.appendIndexRecords(rec, w, seg, &key, &hdr, &lastSpec)
		}
	}
	// Segment records go first: a reader of the log sees a segment before
	// its data.
	var head []byte
	for _, seg := range touched {
		head = append(head, opSegment)
		head = appendBytesLP(head, segmentMetaKey(key[:0], seg.Kind, seg.Group, seg.Start))
		head = appendBytesLP(head, appendInt64(hdr[:0], seg.End))
	}
	return slices.Insert(rec, start, head...)
}
