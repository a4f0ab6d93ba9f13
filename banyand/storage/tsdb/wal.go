package tsdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// writeLog is the store's write-ahead log: the buffered writes' only
// durable copy until a flush ingests them into Pebble. It is a numbered
// sequence of files of records, each framed as
//
//	u32 length | u32 crc32c(file number, payload) | u64 file number | payload
//
// A record of length 0 seals a file: rotate writes it last, so every file
// but the newest ends in one, and a replay that meets a bad record before
// it knows the file is damaged, not torn.
//
// Appends are group-committed: append queues a record, and wait makes the
// caller's record durable by writing and syncing everything queued so far
// in one go, unless another caller's sync already covers it. So concurrent
// batches share one fdatasync, as they did in Pebble's commit pipeline.
// Before it syncs, a caller may wait a moment for the writers the previous
// sync released to append again (see gatherLocked).
//
// Files are recycled, as Pebble recycles its WAL: a file whose records are
// in Pebble is kept as a spare and becomes a later log file, overwritten
// from the start. Writing over blocks the file already has lets
// fdatasync skip the metadata journal commit that growing a file needs
// (on this machine a sync of 64 KB took 95–107 µs and 30–38 µs of CPU
// over a file's old blocks, 158–177 µs and 61–69 µs appended). The file
// number in every record tells a record from the stale ones after it.
type writeLog struct {
	dir    string
	noSync bool
	sync   syncer

	mu      sync.Mutex
	synced  *sync.Cond // broadcast when syncedSeq or err changes, or syncing ends
	f       *os.File
	num     uint64   // number of f
	next    *os.File // file num+1, made ahead of rotate (see prepareNext)
	pending []byte   // framed records appended to f's queue, not yet written
	spare   []byte   // the previous pending, reused
	// appendedSeq counts records queued, syncedSeq those durable.
	appendedSeq, syncedSeq uint64
	// syncedMark is syncedSeq for readers that take no lock (durable).
	syncedMark atomic.Uint64
	syncing    bool
	// err is the first write or sync failure: after it nothing is known to
	// be durable, so every later append and wait fails with it.
	err error

	// gatherWait bounds gatherLocked's wait; 0 syncs at once. takenSeq is
	// the last record a sync took, lastTook how many that sync took, and
	// syncEnded when it finished.
	gatherWait         time.Duration
	takenSeq, lastTook uint64
	syncEnded          time.Time
	// While a caller gathers, append wakes it through gatherCh once
	// gatherFor records are queued.
	gathering   bool
	gatherFor   uint64
	gatherCh    chan struct{}
	gatherTimer *time.Timer

	bytesIn, bytesWritten uint64 // for EngineStats; under mu
	syncs                 uint64 // likewise
}

const (
	walSuffix    = ".log"
	spareSuffix  = ".spare"
	walHeaderLen = 16
	// maxSpares is how many recycled files are kept: a flush frees one
	// and the next rotation takes one.
	maxSpares = 1
	// maxWALRecord bounds a record a replay accepts, so a corrupt length
	// cannot make it allocate gigabytes.
	maxWALRecord = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func walName(num uint64) string { return fmt.Sprintf("%016d%s", num, walSuffix) }

func spareName(num uint64) string { return fmt.Sprintf("%016d%s", num, spareSuffix) }

// frameRecord appends payload framed as a record of log file num; an
// empty payload makes the end marker.
func frameRecord(dst []byte, num uint64, payload []byte) []byte {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], num)
	crc := crc32.Update(crc32.Checksum(n[:], crcTable), crcTable, payload)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	dst = append(dst, n[:]...)
	return append(dst, payload...)
}

// readLogDir returns the numbers of the log files in dir, ascending, and
// the names of its spares.
func readLogDir(dir string) (nums []uint64, spares []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), spareSuffix) {
			spares = append(spares, e.Name())
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), walSuffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("unexpected file %s in the log directory", e.Name())
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return nums, spares, nil
}

// listWAL returns the numbers of the log files in dir, ascending.
func listWAL(dir string) ([]uint64, error) {
	nums, _, err := readLogDir(dir)
	return nums, err
}

// openWriteLog starts log file num in dir. gatherWait is as for
// Options.SyncGather.
func openWriteLog(dir string, num uint64, noSync bool, gatherWait time.Duration, syncs syncer) (*writeLog, error) {
	l := &writeLog{dir: dir, noSync: noSync, gatherWait: gatherWait, sync: syncs}
	l.synced = sync.NewCond(&l.mu)
	f, err := l.create(num)
	if err != nil {
		return nil, err
	}
	l.f, l.num = f, num
	return l, nil
}

// create makes log file num, from a spare if there is one, and syncs the
// directory, so the file survives a crash once a record in it is synced.
func (l *writeLog) create(num uint64) (*os.File, error) {
	path := filepath.Join(l.dir, walName(num))
	_, spares, err := readLogDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("tsdb: create log: %w", err)
	}
	flags := os.O_CREATE | os.O_EXCL | os.O_WRONLY
	if len(spares) > 0 {
		if err := os.Rename(filepath.Join(l.dir, spares[0]), path); err != nil {
			return nil, fmt.Errorf("tsdb: recycle log: %w", err)
		}
		flags = os.O_WRONLY // written over from the start
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tsdb: create log: %w", err)
	}
	if err := l.sync.syncDir(l.dir); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("tsdb: create log: %w", err)
	}
	return f, nil
}

// append queues payload as one record and returns its sequence number for
// wait. It does not block on I/O.
func (l *writeLog) append(payload []byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if len(payload) == 0 {
		return 0, errors.New("tsdb: empty log record") // the end marker's form
	}
	l.pending = frameRecord(l.pending, l.num, payload)
	l.bytesIn += uint64(len(payload))
	l.appendedSeq++
	if l.gathering && l.appendedSeq-l.takenSeq >= l.gatherFor {
		select {
		case l.gatherCh <- struct{}{}:
		default: // already woken
		}
	}
	return l.appendedSeq, nil
}

// wait returns once record seq is durable, or with the log's error.
func (l *writeLog) wait(seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncedSeq < seq && l.err == nil {
		if l.syncing {
			l.synced.Wait()
			continue
		}
		l.gatherLocked()
		l.syncPendingLocked()
	}
	if l.syncedSeq >= seq {
		return nil
	}
	return l.err
}

// durable returns the sequence number through which records are durable:
// a record is readable once its number is at most this.
func (l *writeLog) durable() uint64 { return l.syncedMark.Load() }

// gatherIdle is how many gather times without a sync make the log idle:
// then a sync does not wait for the writers of the last one.
const gatherIdle = 10

// gatherLocked holds a sync back until as many records are queued as the
// previous sync took, or gatherWait has passed. The writers a sync
// releases mostly append their next record within microseconds; a sync
// that starts before they do takes only what is already queued, and the
// rest wait for one more. At moderate load that made a sync, and the
// context switches around it, nearly one a batch (docs/performance.md,
// "Group commit"). It does not wait when that cannot help: a lone writer's
// previous sync took its one record, which is queued; a sync that has
// enough records needs no more; and after gatherIdle gather times without
// a sync, the writers of the last one are not about to come back. (A
// released writer builds its next batch before it appends: at moderate
// load that alone can take longer than one gather time.)
//
// l.mu is held and no sync is running. It is released while waiting, with
// syncing set, so other writers wait for this caller's sync instead of
// starting their own.
func (l *writeLog) gatherLocked() {
	want := l.lastTook
	if l.gatherWait <= 0 || l.appendedSeq-l.takenSeq >= want || time.Since(l.syncEnded) >= gatherIdle*l.gatherWait {
		return
	}
	l.syncing, l.gathering, l.gatherFor = true, true, want
	if l.gatherCh == nil {
		l.gatherCh = make(chan struct{}, 1)
		l.gatherTimer = time.NewTimer(l.gatherWait)
	} else {
		l.gatherTimer.Reset(l.gatherWait)
	}
	l.mu.Unlock()
	select {
	case <-l.gatherCh:
	case <-l.gatherTimer.C:
	}
	l.mu.Lock()
	l.gatherTimer.Stop()
	select {
	case <-l.gatherCh: // a wake that raced the timer
	default:
	}
	l.gathering = false
}

// syncPendingLocked writes and syncs everything queued, releasing mu for
// the I/O so that appends continue meanwhile. l.mu is held and no sync is
// running.
func (l *writeLog) syncPendingLocked() {
	l.syncing = true
	buf, target, f := l.pending, l.appendedSeq, l.f
	l.pending = l.spare[:0]
	l.lastTook, l.takenSeq = target-l.takenSeq, target
	l.mu.Unlock()
	err := l.writeAndSync(f, buf)
	l.mu.Lock()
	l.syncing = false
	if err != nil {
		l.err = fmt.Errorf("tsdb: write-ahead log: %w", err)
	} else {
		l.syncedSeq = target
		l.syncedMark.Store(target)
		l.bytesWritten += uint64(len(buf))
		l.syncs++
		if l.gatherWait > 0 {
			l.syncEnded = time.Now()
		}
	}
	l.spare = buf[:0]
	l.synced.Broadcast()
}

func (l *writeLog) writeAndSync(f *os.File, buf []byte) error {
	if len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			return err
		}
	}
	if l.noSync {
		return nil
	}
	return l.sync.syncFile(f)
}

// rotate makes everything queued durable in the current file, closes it
// and continues in a new one. It returns the number of the closed file:
// every record appended before rotate is in it or in an older file. The
// caller keeps appends out while rotate runs.
func (l *writeLog) rotate() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncing {
		l.synced.Wait()
	}
	if l.err != nil {
		return 0, l.err
	}
	// Seal the file: its records and then the end marker, synced.
	l.pending = frameRecord(l.pending, l.num, nil)
	l.syncPendingLocked()
	if l.err != nil {
		return 0, l.err
	}
	f := l.next
	l.next = nil
	if f == nil {
		var err error
		if f, err = l.create(l.num + 1); err != nil {
			l.err = err
			return 0, err
		}
	}
	old := l.num
	if err := l.f.Close(); err != nil {
		l.err = fmt.Errorf("tsdb: close log: %w", err)
		_ = f.Close()
		return 0, l.err
	}
	l.f, l.num = f, l.num+1
	return old, nil
}

// prepareNext creates the file rotate switches to, so that rotate, which
// runs while writers wait, does not create it (and sync the directory).
func (l *writeLog) prepareNext() error {
	l.mu.Lock()
	num, have := l.num+1, l.next != nil
	l.mu.Unlock()
	if have {
		return nil
	}
	// Only the flusher rotates, and it calls this first: num is still
	// the next number when the file is handed over.
	f, err := l.create(num)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.next = f
	l.mu.Unlock()
	return nil
}

// removeThrough retires the log files numbered up to num, whose records
// are all in Pebble now: up to maxSpares of them are kept for recycling,
// the rest deleted.
func (l *writeLog) removeThrough(num uint64) error {
	nums, spares, err := readLogDir(l.dir)
	if err != nil {
		return fmt.Errorf("tsdb: remove old logs: %w", err)
	}
	for _, n := range nums {
		if n > num {
			break
		}
		path := filepath.Join(l.dir, walName(n))
		if len(spares) < maxSpares {
			if err := os.Rename(path, filepath.Join(l.dir, spareName(n))); err != nil {
				return fmt.Errorf("tsdb: recycle old log: %w", err)
			}
			spares = append(spares, spareName(n))
			continue
		}
		if err := removeGradually(path); err != nil {
			return fmt.Errorf("tsdb: remove old logs: %w", err)
		}
	}
	return nil
}

// removeStep and removePause pace removeGradually.
const (
	removeStep  = 4 << 20
	removePause = 2 * time.Millisecond
)

// removeGradually deletes a file by truncating it a few MB at a time, then
// unlinking it. Freeing a 64 MB file's blocks at once makes the
// filesystem's next journal commit long, and every log sync waits for it
// (a 25–30 ms ack latency spike after each flush on ext4, measured);
// freed in steps, each commit stays short.
func removeGradually(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	for size := fi.Size() - removeStep; size > 0; size -= removeStep {
		if err := os.Truncate(path, size); err != nil {
			return err
		}
		time.Sleep(removePause)
	}
	return os.Remove(path)
}

// close syncs what is queued and closes the file.
func (l *writeLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncing {
		l.synced.Wait()
	}
	if l.err == nil && l.syncedSeq < l.appendedSeq {
		l.syncPendingLocked()
	}
	err := l.f.Close()
	if l.next != nil {
		// Never written: a spare again.
		_ = l.next.Close()
		_ = os.Rename(filepath.Join(l.dir, walName(l.num+1)), filepath.Join(l.dir, spareName(l.num+1)))
		l.next = nil
	}
	if l.err != nil {
		return l.err
	}
	if err == nil {
		l.err = errors.New("tsdb: write-ahead log closed")
	}
	return err
}

func (l *writeLog) stats() (in, written, syncs uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytesIn, l.bytesWritten, l.syncs
}

// errTornRecord marks the end of a log file where a crash interrupted a
// record, or where a recycled file's stale records begin: the record was
// never synced, so never acknowledged.
var errTornRecord = errors.New("torn record")

// readWAL calls fn with each record of log file num at path, in order. It
// reports whether the file ended in its end marker; a record that is cut
// short, fails its checksum or belongs to another file number ends the
// file with errTornRecord, after the valid records before it. The caller
// decides whether that is allowed (only in the newest file).
func readWAL(path string, num uint64, fn func(payload []byte) error) (sealed bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [walHeaderLen]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return false, nil
			}
			if err == io.ErrUnexpectedEOF {
				return false, errTornRecord
			}
			return false, err
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n > maxWALRecord || binary.LittleEndian.Uint64(hdr[8:]) != num {
			return false, errTornRecord
		}
		payload = slices.Grow(payload[:0], int(n))[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return false, errTornRecord
			}
			return false, err
		}
		if crc32.Update(crc32.Checksum(hdr[8:], crcTable), crcTable, payload) != binary.LittleEndian.Uint32(hdr[4:8]) {
			return false, errTornRecord
		}
		if n == 0 {
			return true, nil
		}
		if err := fn(payload); err != nil {
			return false, err
		}
	}
}

// hasRecords reports whether log file num at path begins with a valid
// record (or end marker): a file made ahead of a rotation, or recycled and
// never written to, does not.
func hasRecords(path string, num uint64) bool {
	errFirst := errors.New("first record")
	sealed, err := readWAL(path, num, func([]byte) error { return errFirst })
	return sealed || errors.Is(err, errFirst)
}
