package tsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultBufferBytes is the size at which the write buffer is flushed to
// Pebble: the size Pebble's memtable had before the buffer replaced it.
const DefaultBufferBytes = 64 << 20

// flushRetry is how long the flusher waits after a failed flush.
const flushRetry = time.Second

// flusher writes the buffer out whenever it reaches its size, and retries
// a failed flush, until stopFlusher closes.
func (db *DB) flusher() {
	defer close(db.flusherDone)
	retry := time.NewTicker(flushRetry)
	defer retry.Stop()
	for {
		select {
		case <-db.stopFlusher:
			return
		case <-db.flushKick:
		case <-retry.C:
		}
		for db.needsFlush() {
			if err := db.flushOnce(); err != nil {
				db.log.Error("storage engine flush failed; retrying", "err", err)
				break
			}
		}
	}
}

func (db *DB) needsFlush() bool {
	db.bufMu.RLock()
	defer db.bufMu.RUnlock()
	return db.imm != nil || db.mem.size() >= db.bufferBytes
}

func (db *DB) kickFlusher() {
	select {
	case db.flushKick <- struct{}{}:
	default:
	}
}

// Flush writes everything buffered to Pebble and returns once it is there.
func (db *DB) Flush() error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()
	return db.flushAll()
}

func (db *DB) flushAll() error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	for {
		db.bufMu.RLock()
		done := db.imm == nil && db.mem.size() == 0
		db.bufMu.RUnlock()
		if done {
			return nil
		}
		if err := db.flushOnceLocked(); err != nil {
			return err
		}
	}
}

func (db *DB) flushOnce() error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	return db.flushOnceLocked()
}

// flushOnceLocked seals the mutable buffer (unless a sealed one is still
// waiting, after a failed flush), writes the sealed one as an sstable,
// has Pebble ingest it, and then deletes the log files it came from.
// db.flushMu is held.
func (db *DB) flushOnceLocked() error {
	db.bufMu.Lock()
	if db.imm == nil {
		if db.mem.size() == 0 {
			db.bufMu.Unlock()
			return nil
		}
		num, err := db.wal.rotate()
		if err != nil {
			db.bufMu.Unlock()
			return err
		}
		db.mem.walNum = num
		db.imm, db.mem = db.mem, newMemBuffer()
	}
	imm := db.imm
	db.bufMu.Unlock()

	// Retention neither drops a segment while it is being written out
	// nor finds it resurrected by an ingest that follows its drop.
	db.retention.RLock()
	err := db.ingestBuffer(imm)
	db.retention.RUnlock()
	if err != nil {
		return err
	}
	db.bufMu.Lock()
	db.imm = nil
	db.bufMu.Unlock()
	db.signalRoom()
	return db.wal.removeThrough(imm.walNum)
}

// ingestBuffer writes m's records in key order as one sstable and has
// Pebble ingest it. Streams are written as sets (a newer write replaces an
// older one), measures as merge operands (so measureMerger compares their
// versions with what Pebble holds).
func (db *DB) ingestBuffer(m *memBuffer) error {
	names := m.sortedNames()
	metaKeys := make([]string, 0, len(m.metas))
	for k := range m.metas {
		metaKeys = append(metaKeys, k)
	}
	slices.Sort(metaKeys)
	if len(names) == 0 && len(metaKeys) == 0 {
		return nil
	}
	path := filepath.Join(db.ingestDir, fmt.Sprintf("%016d.sst", db.sstSeq.Add(1)))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("tsdb: flush: %w", err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), db.popts.MakeWriterOptions(0, db.pdb.TableFormat()))
	err = writeBuffer(w, m, names, metaKeys)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	var size int64
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(path); err == nil {
			size = fi.Size()
			err = db.pdb.Ingest(context.Background(), []string{path})
		}
	}
	// Pebble links an ingested file into its own directory: ours goes.
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("tsdb: flush: %w", err)
	}
	db.flushes.Add(1)
	db.flushBytes.Add(uint64(size))
	return nil
}

func writeBuffer(w *sstable.Writer, m *memBuffer, names []*nameBuffer, metaKeys []string) error {
	// Segment records (kind 0x01) sort before all data (0x02, 0x03).
	for _, k := range metaKeys {
		if err := w.Set([]byte(k), m.metas[k]); err != nil {
			return err
		}
	}
	key := make([]byte, 0, 128)
	for _, nb := range names {
		for _, h := range nb.sortedHashes() {
			err := nb.series[h].eachRecord(nb.kind, func(suffix, value []byte) error {
				key = append(binary.BigEndian.AppendUint64(append(key[:0], nb.prefix...), h), suffix...)
				if nb.kind == KindMeasure {
					return w.Merge(key, value)
				}
				return w.Set(key, value)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// waitForRoom holds a writer back while the buffer is full and the flush
// that would empty it is still running, so memory stays bounded at about
// twice the buffer size. It counts as a write stall.
func (db *DB) waitForRoom() error {
	for {
		db.bufMu.RLock()
		size, flushing := db.mem.size(), db.imm != nil
		db.bufMu.RUnlock()
		if size < db.bufferBytes || (!flushing && size < 2*db.bufferBytes) {
			return nil
		}
		db.kickFlusher()
		db.roomMu.Lock()
		room := db.room
		db.roomMu.Unlock()
		// Checked again after taking the channel: a flush that finished in
		// between closed the previous one.
		db.bufMu.RLock()
		size, flushing = db.mem.size(), db.imm != nil
		db.bufMu.RUnlock()
		if size < db.bufferBytes || (!flushing && size < 2*db.bufferBytes) {
			return nil
		}
		db.stalls.enter("write buffer full, flush in progress")
		select {
		case <-room:
		case <-db.stopFlusher:
			db.stalls.leave()
			return ErrClosed
		}
		db.stalls.leave()
	}
}

func (db *DB) signalRoom() {
	db.roomMu.Lock()
	close(db.room)
	db.room = make(chan struct{})
	db.roomMu.Unlock()
}

// replay rebuilds the buffer from the log files a previous run left (its
// buffered writes that never reached Pebble), writes it to Pebble and
// returns the number the new log file starts at. Files are replayed in
// order into one buffer, so a retention drop logged in a later file
// removes the records of earlier ones. Only the newest file may end in a
// torn record (a write that was never synced, so never acknowledged); a
// bad record anywhere else is corruption, and Open fails rather than lose
// acknowledged writes silently.
func (db *DB) replay() (next uint64, err error) {
	nums, err := listWAL(db.walDir)
	if err != nil {
		return 0, fmt.Errorf("tsdb: replay: %w", err)
	}
	if len(nums) == 0 {
		return 1, nil
	}
	m := newMemBuffer()
	onSegment := func(op byte, key, value []byte) error {
		kind, group, start, err := parseSegmentMetaKey(key)
		if err != nil {
			return err
		}
		if op == opDrop {
			db.segs.forget(kind, group, start)
			return nil
		}
		if len(value) != 8 {
			return errMalformed
		}
		db.segs.ensure(Segment{Kind: kind, Group: group, Start: start, End: readInt64(value)})
		return nil
	}
	records := 0
	for i, n := range nums {
		path := filepath.Join(db.walDir, walName(n))
		err := readWAL(path, func(p []byte) error { records++; return m.applyOps(p, onSegment) })
		if errors.Is(err, errTornRecord) && i == len(nums)-1 {
			db.log.Warn("write-ahead log ends in a torn record (a write that was never acknowledged); ignoring it", "file", path)
			err = nil
		}
		if err != nil {
			return 0, fmt.Errorf("tsdb: replay %s: %w", path, err)
		}
	}
	if err := db.ingestBuffer(m); err != nil {
		return 0, err
	}
	db.log.Info("replayed write-ahead log", "files", len(nums), "records", records, "bytes", m.size())
	return nums[len(nums)-1] + 1, nil
}
