package tsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
		if err := db.flushOnceLocked(false); err != nil {
			return err
		}
	}
}

func (db *DB) flushOnce() error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	return db.flushOnceLocked(true)
}

// flushOnceLocked seals the mutable buffer (unless a sealed one is still
// waiting, after a failed flush), writes the sealed one as an sstable,
// has Pebble ingest it, and then retires the log files it came from
// (see removeThrough). db.flushMu is held. paced spreads the work (see
// flushPacer).
func (db *DB) flushOnceLocked(paced bool) error {
	// The next log file is made before writers are held back for the
	// switch: creating it syncs the directory.
	if err := db.wal.prepareNext(); err != nil {
		return err
	}
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
		now := time.Now()
		if !db.sealedAt.IsZero() {
			db.fillTime = now.Sub(db.sealedAt)
		}
		db.sealedAt = now
	}
	imm := db.imm
	db.bufMu.Unlock()

	var pace *flushPacer
	if paced {
		budget := maxFlushSpread / 2 // the first buffer: its fill time is not known
		if db.fillTime > 0 {
			budget = min(db.fillTime/2, maxFlushSpread)
		}
		pace = &flushPacer{db: db, total: imm.size(), budget: budget, began: time.Now()}
	}
	began := time.Now()
	err := db.ingestBufferPaced(imm, pace)
	if err != nil {
		return err
	}
	db.log.Debug("flushed write buffer", "bytes", imm.size(), "took", time.Since(began))
	db.bufMu.Lock()
	db.imm = nil
	db.bufMu.Unlock()
	imm.retire()
	db.signalRoom()
	return db.wal.removeThrough(imm.walNum)
}

// ingestBuffer writes m's records in key order as one sstable and has
// Pebble ingest it. Streams are written as sets (a newer write replaces an
// older one), measures as merge operands (so measureMerger compares their
// versions with what Pebble holds).
func (db *DB) ingestBuffer(m *memBuffer) error { return db.ingestBufferPaced(m, nil) }

func (db *DB) ingestBufferPaced(m *memBuffer, pace *flushPacer) error {
	for {
		drops := db.drops.Load()
		path, size, err := db.buildTable(m, pace)
		if err != nil || path == "" {
			return err
		}
		if db.afterBuild != nil {
			db.afterBuild()
		}
		// Under the retention lock, so that no drop falls between the
		// check and the ingest: a drop that came while the table was being
		// built has pruned m, and the table is built again from what is
		// left (rare: retention runs seldom); one that comes after the
		// ingest deletes what it ingested.
		db.retention.RLock()
		again := db.drops.Load() != drops
		if !again {
			err = db.pdb.Ingest(context.Background(), []string{path})
		}
		db.retention.RUnlock()
		// Pebble links an ingested file into its own directory: ours goes.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("tsdb: flush: %w", err)
		}
		if again {
			pace = nil
			continue
		}
		db.flushes.Add(1)
		db.flushBytes.Add(uint64(size))
		return nil
	}
}

// buildTable writes m as an sstable in the ingest directory and returns
// its path ("" if m holds nothing) and size.
func (db *DB) buildTable(m *memBuffer, pace *flushPacer) (path string, size int64, err error) {
	names, metas := m.sorted()
	if len(names) == 0 && len(metas) == 0 {
		return "", 0, nil
	}
	path = filepath.Join(db.ingestDir, fmt.Sprintf("%016d.sst", db.sstSeq.Add(1)))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return "", 0, fmt.Errorf("tsdb: flush: %w", err)
	}
	// Written back as it goes, as Pebble's own flushes are: one sync of
	// 64 MB at the end would queue every log sync behind it.
	f = vfs.NewSyncingFile(f, vfs.SyncingFileOptions{BytesPerSync: db.popts.BytesPerSync})
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), db.popts.MakeWriterOptions(0, db.pdb.TableFormat()))
	err = writeBuffer(w, names, metas, pace)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(path); err == nil {
			return path, fi.Size(), nil
		}
	}
	_ = os.Remove(path)
	return "", 0, fmt.Errorf("tsdb: flush: %w", err)
}

func writeBuffer(w *sstable.Writer, names []*nameBuffer, metas [][2][]byte, pace *flushPacer) error {
	// Segment records (kind 0x01) sort before all data (0x02, 0x03).
	for _, kv := range metas {
		if err := w.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	key := make([]byte, 0, 128)
	for _, nb := range names {
		for _, h := range nb.sortedHashes() {
			sb := nb.series[h]
			pace.wrote(sb.bytes + int64(len(sb.entries))*entryOverhead)
			err := sb.eachRecord(nb.kind, allVisible, func(suffix, value []byte) error {
				key = append(binary.BigEndian.AppendUint64(append(key[:0], nb.prefix...), h), suffix...)
				if nb.kind.versioned() {
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

// maxFlushSpread bounds how long a paced flush may take.
const maxFlushSpread = 2 * time.Second

// flushPacer spreads a flush over half the time the buffer took to fill,
// sleeping whenever it is ahead. Written at full speed, a 64 MB flush
// takes a core for ~0.4 s, and on a small machine the requests queued
// behind it are the slowest acks of the run; spread out, the same work
// leaves room for them. It goes full speed again once the next buffer is
// three quarters full, so pacing never holds writers back.
type flushPacer struct {
	db     *DB
	total  int64
	done   int64
	budget time.Duration
	began  time.Time
	next   int64 // bytes after which to check again
}

const paceStep = 1 << 20

func (p *flushPacer) wrote(n int64) {
	if p == nil {
		return
	}
	p.done += n
	if p.done < p.next || p.total <= 0 {
		return
	}
	p.next = p.done + paceStep
	if p.db.mem.size() >= p.db.bufferBytes*3/4 {
		p.budget = 0
	}
	due := time.Duration(float64(p.budget) * float64(p.done) / float64(p.total))
	if ahead := due - time.Since(p.began); ahead > time.Millisecond {
		time.Sleep(ahead)
	}
}

// waitForRoom holds a writer back while the buffer is full and the flush
// that would empty it is still running, so memory stays bounded at about
// twice the buffer size. It counts as a write stall.
func (db *DB) waitForRoom(ctx context.Context) error {
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
		case <-ctx.Done():
			db.stalls.leave()
			return fmt.Errorf("tsdb: gave up waiting for room in the write buffer (a flush is behind or failing): %w", ctx.Err())
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
// removes the records of earlier ones. The newest file with records ends
// at its first torn record (a write that was never synced, so never
// acknowledged) or stale one (a recycled file's previous records); every
// older file must end in its end marker, and a bad record before it is
// damage: Open fails rather than lose acknowledged writes silently.
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
	// The newest file with records: the flusher makes the next file
	// ahead of a rotation (from a spare, with stale records of another
	// number), so a crash can leave one after it with none of its own.
	newest := -1
	for i, n := range nums {
		if hasRecords(filepath.Join(db.walDir, walName(n)), n) {
			newest = i
		}
	}
	records := 0
	for i, n := range nums[:newest+1] {
		path := filepath.Join(db.walDir, walName(n))
		sealed, err := readWAL(path, n, func(p []byte) error { records++; return m.applyOps(p, 0, onSegment) })
		switch {
		case i == newest && errors.Is(err, errTornRecord):
			db.log.Warn("write-ahead log ends in a torn record (a write that was never acknowledged); ignoring it", "file", path)
		case err != nil:
			return 0, fmt.Errorf("tsdb: replay %s: %w", path, err)
		case i < newest && !sealed:
			return 0, fmt.Errorf("tsdb: replay %s: a log file before the newest ends without its end marker: damaged", path)
		}
	}
	if err := db.ingestBuffer(m); err != nil {
		return 0, err
	}
	db.log.Info("replayed write-ahead log", "files", len(nums), "records", records, "bytes", m.size())
	m.retire()
	return nums[len(nums)-1] + 1, nil
}
