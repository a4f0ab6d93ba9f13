package tsdb

import (
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// EngineStats is what the storage engine does in the background: flushes,
// compactions, the shape of L0 and write stalls. Byte and event counts are
// cumulative since Open; the rest are values at the time of the call.
type EngineStats struct {
	// QuerySegments, QueryIndexedSegments and QueryRecords are what the
	// node's queries read: segments, those read through their tag
	// indexes, and records visited (filled in by the storage layer).
	QuerySegments, QueryIndexedSegments, QueryRecords int64

	// WALBytesIn is the logical bytes written to the write-ahead logs (the
	// store's own and Pebble's); WALBytesWritten the physical bytes
	// (framing and padding included).
	WALBytesIn, WALBytesWritten uint64
	// WALSyncs counts the store's log writes, each one fdatasync (group
	// commits): with the writes they carried, what a sync costs.
	WALSyncs uint64

	// Flushes counts write buffer and memtable flushes; FlushBytes is the
	// sstable bytes they wrote.
	Flushes    int64
	FlushBytes uint64

	// Compactions counts finished compactions, over all levels.
	Compactions            int64
	CompactionBytesRead    uint64
	CompactionBytesWritten uint64
	CompactionsInProgress  int64
	// CompactionDebtBytes estimates the bytes compactions must still
	// rewrite to bring every level within its target size.
	CompactionDebtBytes uint64

	// L0Sublevels is L0's read amplification; Pebble stalls writes when it
	// reaches L0StopWritesThreshold.
	L0Sublevels int64
	L0Files     int64

	// MemTableBytes and MemTables include the write buffers (the one
	// taking writes and one being flushed) and memtables queued for flush.
	MemTableBytes uint64
	MemTables     int64

	// DiskBytes is the space the database uses on disk, logs included.
	DiskBytes uint64

	// WriteAmp is the bytes written to the WAL and sstables (flushes and
	// compactions) per byte written to the WAL; 0 before the first write.
	WriteAmp float64

	// WriteStalls counts the times Pebble held writes back (too many
	// memtables or L0 sublevels); WriteStallTime is their total length,
	// counted when each stall ends.
	WriteStalls    int64
	WriteStallTime time.Duration
}

// EngineStats reads Pebble's metrics. It is cheap enough to call once per
// scrape. Once Close began it returns the last value it read (with the
// current write stall counts), or only the write stall counts if it was
// never called: Pebble's metrics are not readable after Close.
func (db *DB) EngineStats() EngineStats {
	if err := db.acquire(); err != nil {
		var s EngineStats
		if last := db.lastStats.Load(); last != nil {
			s = *last
		}
		db.stalls.fill(&s)
		return s
	}
	defer db.release()

	m := db.pdb.Metrics()
	s := EngineStats{
		WALBytesIn:            m.WAL.BytesIn,
		WALBytesWritten:       m.WAL.BytesWritten,
		Flushes:               m.Flush.Count,
		Compactions:           m.Compact.Count,
		CompactionsInProgress: m.Compact.NumInProgress,
		CompactionDebtBytes:   m.Compact.EstimatedDebt,
		L0Sublevels:           int64(m.Levels[0].Sublevels),
		L0Files:               m.Levels[0].TablesCount,
		MemTableBytes:         m.MemTable.Size,
		MemTables:             m.MemTable.Count,
		DiskBytes:             m.DiskSpaceUsage(),
	}
	for i := range m.Levels {
		l := &m.Levels[i]
		s.FlushBytes += l.TableBytesFlushed
		s.CompactionBytesRead += l.TableBytesRead
		s.CompactionBytesWritten += l.TableBytesCompacted
	}
	db.addBufferStats(&s)
	if s.WALBytesIn > 0 {
		s.WriteAmp = float64(s.WALBytesWritten+s.FlushBytes+s.CompactionBytesWritten) / float64(s.WALBytesIn)
	}
	db.stalls.fill(&s)
	db.lastStats.Store(&s)
	return s
}

// addBufferStats adds the write log and buffers to s, which holds
// Pebble's own.
func (db *DB) addBufferStats(s *EngineStats) {
	in, written, syncs := db.wal.stats()
	s.WALBytesIn += in
	s.WALBytesWritten += written
	s.WALSyncs = syncs
	s.Flushes += db.flushes.Load()
	s.FlushBytes += db.flushBytes.Load()
	db.bufMu.RLock()
	s.MemTables++
	s.MemTableBytes += uint64(db.mem.size())
	if db.imm != nil {
		s.MemTables++
		s.MemTableBytes += uint64(db.imm.size())
	}
	db.bufMu.RUnlock()
	if entries, err := os.ReadDir(db.walDir); err == nil { // log files and the spare
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && !e.IsDir() {
				s.DiskBytes += uint64(fi.Size())
			}
		}
	}
}

// writeStalls counts Pebble's write stalls through its event listener.
type writeStalls struct {
	log   *slog.Logger
	count atomic.Int64
	nanos atomic.Int64 // total length of the stalls that ended
	// began is touched only by begin and end, which Pebble calls one stall
	// at a time under its DB mutex.
	began time.Time

	// The write buffer's stalls: several writers may wait at once; the
	// first to wait starts a stall and the last to go on ends it.
	mu          sync.Mutex
	waiting     int
	bufferBegan time.Time
}

// listener is the pebble.EventListener that feeds s.
func (s *writeStalls) listener() pebble.EventListener {
	return pebble.EventListener{WriteStallBegin: s.begin, WriteStallEnd: s.end}
}

func (s *writeStalls) begin(info pebble.WriteStallBeginInfo) {
	s.began = time.Now()
	s.count.Add(1)
	// Warn: writes wait until the stall ends; rare, and the cause of
	// latency an operator will look for.
	s.log.Warn("storage engine stalls writes", "reason", info.Reason)
}

func (s *writeStalls) end() {
	d := time.Since(s.began)
	s.nanos.Add(int64(d))
	s.log.Warn("storage engine write stall ended", "duration", d)
}

// enter and leave bracket a writer's wait for room in the write buffer.
func (s *writeStalls) enter(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting == 0 {
		s.bufferBegan = time.Now()
		s.count.Add(1)
		s.log.Warn("storage engine stalls writes", "reason", reason)
	}
	s.waiting++
}

func (s *writeStalls) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting--
	if s.waiting == 0 {
		d := time.Since(s.bufferBegan)
		s.nanos.Add(int64(d))
		s.log.Warn("storage engine write stall ended", "duration", d)
	}
}

func (s *writeStalls) fill(st *EngineStats) {
	st.WriteStalls = s.count.Load()
	st.WriteStallTime = time.Duration(s.nanos.Load())
}
