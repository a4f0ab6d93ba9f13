package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
)

// EngineStatsOf reads store's engine stats; false while the store is not
// open.
func EngineStatsOf(store *storage.Store) func() (tsdb.EngineStats, bool) {
	return func() (tsdb.EngineStats, bool) {
		db, err := store.DB()
		if err != nil {
			return tsdb.EngineStats{}, false
		}
		st := db.EngineStats()
		r := store.ReadTotals()
		st.QuerySegments, st.QueryIndexedSegments, st.QueryRecords = r.Segments, r.IndexedSegments, r.Records
		return st, true
	}
}

// engineMetric is one banyand_storage_engine_* series and how to read it.
type engineMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(*tsdb.EngineStats) float64
}

// engineCollector reads the storage engine's (Pebble's) stats once per
// scrape. It emits nothing while the store is not open.
type engineCollector struct {
	stats   func() (tsdb.EngineStats, bool)
	metrics []engineMetric
}

func newEngineCollector(stats func() (tsdb.EngineStats, bool)) *engineCollector {
	c := &engineCollector{stats: stats}
	add := func(name string, typ prometheus.ValueType, help string, value func(*tsdb.EngineStats) float64) {
		c.metrics = append(c.metrics, engineMetric{
			desc: prometheus.NewDesc("banyand_storage_engine_"+name, help, nil, nil), typ: typ, value: value,
		})
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	add("query_segments_total", counter, "Segments queries read (a segment is one group's data of one time interval).",
		func(s *tsdb.EngineStats) float64 { return float64(s.QuerySegments) })
	add("query_indexed_segments_total", counter, "Segments queries read through their tag indexes (index rules) instead of whole; far below query_segments_total means the criteria miss the index rules.",
		func(s *tsdb.EngineStats) float64 { return float64(s.QueryIndexedSegments) })
	add("query_records_total", counter, "Records (elements, data points, spans) queries read and evaluated: the query load on the node's CPU.",
		func(s *tsdb.EngineStats) float64 { return float64(s.QueryRecords) })
	add("wal_bytes_in_total", counter, "Logical bytes written to the write-ahead log: the write load the engine sees.",
		func(s *tsdb.EngineStats) float64 { return float64(s.WALBytesIn) })
	add("wal_bytes_written_total", counter, "Physical bytes written to the write-ahead log: the disk bandwidth syncing writes takes.",
		func(s *tsdb.EngineStats) float64 { return float64(s.WALBytesWritten) })
	add("wal_syncs_total", counter, "Writes of the write-ahead log, each one fdatasync (group commits); the write batches they carried per sync show how well --write-log-gather shares them.",
		func(s *tsdb.EngineStats) float64 { return float64(s.WALSyncs) })
	add("flushes_total", counter, "Write buffer flushes (sstables ingested into Pebble) and Pebble memtable flushes: each costs CPU and disk, and their rate follows the write load.",
		func(s *tsdb.EngineStats) float64 { return float64(s.Flushes) })
	add("flush_bytes_total", counter, "Sstable bytes written by write buffer and memtable flushes, part of the write amplification.",
		func(s *tsdb.EngineStats) float64 { return float64(s.FlushBytes) })
	add("compactions_total", counter, "Compactions finished: background work that competes with writes and queries for CPU and disk.",
		func(s *tsdb.EngineStats) float64 { return float64(s.Compactions) })
	add("compaction_bytes_read_total", counter, "Sstable bytes compactions read: the disk read bandwidth background work takes.",
		func(s *tsdb.EngineStats) float64 { return float64(s.CompactionBytesRead) })
	add("compaction_bytes_written_total", counter, "Sstable bytes compactions wrote: the disk write bandwidth background work takes.",
		func(s *tsdb.EngineStats) float64 { return float64(s.CompactionBytesWritten) })
	add("compactions_in_progress", gauge, "Compactions running now; always at the limit (1, Pebble's default concurrency) means compaction cannot keep up.",
		func(s *tsdb.EngineStats) float64 { return float64(s.CompactionsInProgress) })
	add("compaction_debt_bytes", gauge, "Estimated bytes compactions must rewrite to catch up; steady growth leads to write stalls.",
		func(s *tsdb.EngineStats) float64 { return float64(s.CompactionDebtBytes) })
	add("l0_sublevels", gauge, "L0 sublevels (L0's read amplification): writes stall when they reach Pebble's L0 stop threshold (12), so a rising value warns of a stall.",
		func(s *tsdb.EngineStats) float64 { return float64(s.L0Sublevels) })
	add("l0_files", gauge, "Sstables in L0; many means flushes outpace L0 compactions.",
		func(s *tsdb.EngineStats) float64 { return float64(s.L0Files) })
	add("memtable_bytes", gauge, "Bytes in the write buffers and memtables, the one being flushed included: memory held by unflushed writes.",
		func(s *tsdb.EngineStats) float64 { return float64(s.MemTableBytes) })
	add("memtables", gauge, "Write buffers and memtables, those taking writes and those being flushed: a count that stays up means flushes fall behind, which ends in a write stall.",
		func(s *tsdb.EngineStats) float64 { return float64(s.MemTables) })
	add("disk_bytes", gauge, "Disk space the storage engine uses, write-ahead log included: plan capacity and retention with it.",
		func(s *tsdb.EngineStats) float64 { return float64(s.DiskBytes) })
	add("write_amplification", gauge, "Bytes written to the write-ahead log and sstables per byte written to the log; high means compaction eats the disk bandwidth.",
		func(s *tsdb.EngineStats) float64 { return s.WriteAmp })
	add("write_stalls_total", counter, "Times the engine held writes back (write buffer full while the previous one flushes, too many memtables or L0 sublevels): each shows up as write latency.",
		func(s *tsdb.EngineStats) float64 { return float64(s.WriteStalls) })
	add("write_stall_seconds_total", counter, "Time writes were held back by write stalls, counted when each ends: the tail latency they cost.",
		func(s *tsdb.EngineStats) float64 { return s.WriteStallTime.Seconds() })
	return c
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.stats()
	if !ok {
		return
	}
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(&s))
	}
}
