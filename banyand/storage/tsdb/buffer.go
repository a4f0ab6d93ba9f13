package tsdb

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// memBuffer holds written records until a flush writes them to Pebble as
// one sstable (docs/design/write-buffer.md). It replaces Pebble's memtable
// on the write path: a record is appended to its series' buffer, with no
// comparison against other series, because a series' elements mostly
// arrive in time order. Records are sorted only when a flush or a scan
// needs them in order and a late one came in.
//
// A memBuffer is mutable until sealed by a flush; then nothing is added to
// it, and it stays readable until its sstable is ingested.
//
// A record is added before its log sync and read only after it: each
// entry keeps the sequence number of its log record, and a scan skips
// the entries past the log's durable mark (writeLog.durable). So a reader
// never sees a write that a crash could still lose and that nobody was
// acked for, and writers add in parallel with the sync as before. A
// sealed buffer was synced whole before it was sealed (rotate).
type memBuffer struct {
	mu    sync.Mutex
	names map[string]*nameBuffer // by name prefix (see namePrefix)
	// metas are the segment records of the segments the records belong
	// to, by key; they go to Pebble with the records.
	metas map[string][]byte
	bytes atomic.Int64 // read without mu: writers check it on every batch
	arena arena
	// walNum is, once sealed, the newest log file holding its records.
	walNum uint64
	// last caches the name buffer of the previous add: a batch is mostly
	// one stream or measure.
	last *nameBuffer

	// refs counts the scans holding records of m; retired says m is in
	// Pebble and out of the DB's buffers. The last of the two to let go
	// recycles the arena.
	refMu   sync.Mutex
	refs    int
	retired bool
}

func (m *memBuffer) ref() {
	m.refMu.Lock()
	m.refs++
	m.refMu.Unlock()
}

func (m *memBuffer) unref() {
	m.refMu.Lock()
	m.refs--
	free := m.refs == 0 && m.retired
	m.refMu.Unlock()
	if free {
		m.arena.release()
	}
}

// retire is called once m's records are in Pebble and no new scan can
// find m.
func (m *memBuffer) retire() {
	m.refMu.Lock()
	m.retired = true
	free := m.refs == 0
	m.refMu.Unlock()
	if free {
		m.arena.release()
	}
}

// nameBuffer holds one stream's or measure's records in one segment.
type nameBuffer struct {
	prefix []byte
	kind   Kind
	series map[uint64]*seriesBuffer
}

// seriesBuffer holds one series' records in arrival order. A record is its
// key suffix (be64s timestamp, element id) followed by its stored value,
// in the buffer's arena.
type seriesBuffer struct {
	entries []bufEntry
	arena   *arena
	bytes   int64 // arena bytes of the entries
	// unordered is set when a record arrived whose suffix is not greater
	// than its predecessor's: the entries need sorting, and may hold
	// duplicates, before they are read in order.
	unordered bool
}

type bufEntry struct {
	// head is the suffix's first 8 bytes (its timestamp) as a big-endian
	// number (see suffixHead): entries compare by it without reading the
	// arena, which decides almost every comparison of a sort or a
	// duplicate check.
	head       uint64
	chunk, off uint32 // the suffix starts at chunks[chunk][off], the value follows
	suffixLen  uint32
	valueLen   uint32
	seq        uint64 // of the log record that added it; 0 for a replay's
}

// allVisible reads every entry: of a sealed buffer, or a replay's.
const allVisible = math.MaxUint64

func (e bufEntry) suffix(a *arena) []byte {
	return a.chunks[e.chunk][e.off : e.off+e.suffixLen]
}

func (e bufEntry) value(a *arena) []byte {
	return a.chunks[e.chunk][e.off+e.suffixLen : e.off+e.suffixLen+e.valueLen]
}

// suffixHead is s's first 8 bytes as a big-endian number, a shorter s
// padded with zeros: of two suffixes with different heads, the smaller
// head is the smaller suffix.
func suffixHead(s []byte) uint64 {
	if len(s) >= 8 {
		return binary.BigEndian.Uint64(s)
	}
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// compareSuffix orders x and y by suffix, as bytes.Compare of the two.
func compareSuffix(a *arena, x, y *bufEntry) int {
	if x.head != y.head {
		return cmp.Compare(x.head, y.head)
	}
	return bytes.Compare(x.suffix(a), y.suffix(a))
}

// sameSuffix reports whether x and y have the same suffix.
func sameSuffix(a *arena, x, y *bufEntry) bool {
	return x.head == y.head && x.suffixLen == y.suffixLen && bytes.Equal(x.suffix(a), y.suffix(a))
}

// arena holds a buffer's record bytes in chunks that are filled and never
// moved: growing it copies nothing, and what a scan took stays valid.
// Once the buffer is in Pebble and no scan holds it, its chunks go back to
// chunkPool for the next buffers.
type arena struct{ chunks [][]byte }

const arenaChunk = 1 << 20

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, arenaChunk); return &b }}

func (a *arena) release() {
	for i, c := range a.chunks {
		if cap(c) == arenaChunk {
			c = c[:0]
			chunkPool.Put(&c)
		}
		a.chunks[i] = nil
	}
	a.chunks = nil
}

// alloc returns n bytes of space and where they are.
func (a *arena) alloc(n int) (chunk, off uint32, b []byte) {
	if k := len(a.chunks); k > 0 {
		c := a.chunks[k-1]
		if cap(c)-len(c) >= n {
			a.chunks[k-1] = c[:len(c)+n]
			return uint32(k - 1), uint32(len(c)), c[len(c) : len(c)+n]
		}
	}
	var c []byte
	if n <= arenaChunk {
		c = (*chunkPool.Get().(*[]byte))[:n]
	} else {
		c = make([]byte, n)
	}
	a.chunks = append(a.chunks, c)
	return uint32(len(a.chunks) - 1), 0, c
}

// entryOverhead approximates the memory of a record beyond its bytes.
const entryOverhead = 32

func newMemBuffer() *memBuffer {
	return &memBuffer{names: make(map[string]*nameBuffer), metas: make(map[string][]byte)}
}

// Log record ops (docs/design/write-buffer.md). A log record is a sequence
// of ops, applied in order, so a batch is one record.
const (
	// opPut: lp(series prefix) lp(suffix) lp(value). The series prefix is
	// a name prefix followed by the be64 series hash.
	opPut byte = 1
	// opSegment: lp(segment record key) lp(segment record value).
	opSegment byte = 2
	// opDrop: lp(segment prefix) lp(segment record key): retention
	// dropped the segment; records logged before it are gone.
	opDrop byte = 3
)

func appendBytesLP(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// applyOps adds the records of a log record to m, or removes what a drop
// removes. Replay and the write path both add through it, so what a
// restart rebuilds is what the writes built. seq is the record's number
// in the log (see memBuffer), 0 in a replay.
// onSegment, if set, sees every segment record (opSegment) and drop
// (opDrop, with the segment record key).
func (m *memBuffer) applyOps(rec []byte, seq uint64, onSegment func(op byte, key, value []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(rec) > 0 {
		op := rec[0]
		a, rest, err := splitLP(rec[1:])
		if err != nil {
			return err
		}
		b, rest, err := splitLP(rest)
		if err != nil {
			return err
		}
		switch op {
		case opPut:
			var v []byte
			if v, rest, err = splitLP(rest); err != nil {
				return err
			}
			if len(a) < 1+8 || len(b) < 8 {
				return errMalformed
			}
			m.putLocked(a, b, v, seq)
		case opSegment:
			if onSegment != nil {
				if err := onSegment(op, a, b); err != nil {
					return err
				}
			}
			if _, ok := m.metas[string(a)]; !ok {
				m.metas[string(a)] = bytes.Clone(b)
			}
		case opDrop:
			if onSegment != nil {
				if err := onSegment(op, b, nil); err != nil {
					return err
				}
			}
			m.dropLocked(a, b)
		default:
			return fmt.Errorf("%w: log op %d", errMalformed, op)
		}
		rec = rest
	}
	return nil
}

func (m *memBuffer) putLocked(seriesPrefix, suffix, value []byte, seq uint64) {
	np, hash := seriesPrefix[:len(seriesPrefix)-8], binary.BigEndian.Uint64(seriesPrefix[len(seriesPrefix)-8:])
	nb := m.last
	if nb == nil || !bytes.Equal(nb.prefix, np) {
		nb = m.names[string(np)]
		if nb == nil {
			nb = &nameBuffer{prefix: bytes.Clone(np), kind: Kind(np[0]), series: make(map[uint64]*seriesBuffer)}
			m.names[string(np)] = nb
		}
		m.last = nb
	}
	sb := nb.series[hash]
	if sb == nil {
		sb = &seriesBuffer{arena: &m.arena}
		nb.series[hash] = sb
	}
	n := len(suffix) + len(value)
	chunk, off, b := m.arena.alloc(n)
	copy(b[copy(b, suffix):], value)
	e := bufEntry{head: suffixHead(suffix), chunk: chunk, off: off, suffixLen: uint32(len(suffix)), valueLen: uint32(len(value)), seq: seq}
	if k := len(sb.entries); k > 0 && !sb.unordered && compareSuffix(sb.arena, &e, &sb.entries[k-1]) <= 0 {
		sb.unordered = true
	}
	sb.entries = append(sb.entries, e)
	sb.bytes += int64(n)
	m.bytes.Add(int64(n) + entryOverhead)
}

// dropLocked removes every record and the segment record of a dropped
// segment.
func (m *memBuffer) dropLocked(segPrefix, metaKey []byte) {
	for k, nb := range m.names {
		if bytes.HasPrefix(nb.prefix, segPrefix) {
			for _, sb := range nb.series {
				m.bytes.Add(-(sb.bytes + int64(len(sb.entries))*entryOverhead))
			}
			delete(m.names, k)
		}
	}
	delete(m.metas, string(metaKey))
	m.last = nil
}

func (m *memBuffer) size() int64 { return m.bytes.Load() }

// orderLocked sorts a series' entries by suffix, if a late record came in.
// Records of one key are ordered as their log records are (seq; a
// replay's, seq 0, are older than any new one and keep the log's order):
// concurrent writers may add to the buffer in another order than they
// logged, and a read must see what a replay of the log would rebuild.
// Among records of one key and one log record, the one added later is
// later in the arena (it only grows), which makes the order total: any
// sort gives what a stable one would. Late records are mostly late by a
// few places (concurrent writers of one series), so an insertion sort
// moves each a few places; past a few moves an entry on average, the
// entries are sorted by pattern-defeating quicksort.
func (sb *seriesBuffer) orderLocked() {
	if !sb.unordered {
		return
	}
	order := func(x, y *bufEntry) int {
		if c := compareSuffix(sb.arena, x, y); c != 0 {
			return c
		}
		if c := cmp.Compare(x.seq, y.seq); c != 0 {
			return c
		}
		if c := cmp.Compare(x.chunk, y.chunk); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off)
	}
	if !insertionSort(sb.entries, order, 8*len(sb.entries)) {
		slices.SortFunc(sb.entries, func(x, y bufEntry) int { return order(&x, &y) })
	}
	sb.unordered = false
}

// insertionSort sorts es by order unless that takes more than maxMoves
// moves; then it returns false, es partly sorted.
func insertionSort(es []bufEntry, order func(x, y *bufEntry) int, maxMoves int) bool {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && order(&es[j-1], &es[j]) > 0; j-- {
			es[j-1], es[j] = es[j], es[j-1]
			if maxMoves--; maxMoves < 0 {
				return false
			}
		}
	}
	return true
}

// resolve picks, of records with the same key, the one a read sees: the
// highest version, the newest among equals (as measureMerger does).
// Records are oldest first.
func resolve(kind Kind, older, newer []byte) []byte {
	if !kind.versioned() {
		return newer
	}
	vo, err1 := valueVersion(kind, older)
	vn, err2 := valueVersion(kind, newer)
	if err1 == nil && (err2 != nil || vo > vn) {
		return older
	}
	return newer
}

// eachRecord calls fn with every record of sb in key order, duplicates
// resolved, of the entries whose log record is at most visible. sb is
// ordered.
func (sb *seriesBuffer) eachRecord(kind Kind, visible uint64, fn func(suffix, value []byte) error) error {
	for i := 0; i < len(sb.entries); {
		if sb.entries[i].seq > visible {
			i++
			continue
		}
		s, v := sb.entries[i].suffix(sb.arena), sb.entries[i].value(sb.arena)
		j := i + 1
		for ; j < len(sb.entries) && sameSuffix(sb.arena, &sb.entries[j], &sb.entries[i]); j++ {
			if sb.entries[j].seq <= visible {
				v = resolve(kind, v, sb.entries[j].value(sb.arena))
			}
		}
		if err := fn(s, v); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// sorted returns m's name buffers in key order, each series ordered, and
// its segment records (key, value) in key order. m is sealed: nothing adds
// to the name buffers returned, and a drop only removes them from m.
func (m *memBuffer) sorted() ([]*nameBuffer, [][2][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]*nameBuffer, 0, len(m.names))
	for _, nb := range m.names {
		for _, sb := range nb.series {
			sb.orderLocked()
		}
		names = append(names, nb)
	}
	slices.SortFunc(names, func(a, b *nameBuffer) int { return bytes.Compare(a.prefix, b.prefix) })
	metas := make([][2][]byte, 0, len(m.metas))
	for k, v := range m.metas {
		metas = append(metas, [2][]byte{[]byte(k), v})
	}
	slices.SortFunc(metas, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	return names, metas
}

func (nb *nameBuffer) sortedHashes() []uint64 {
	hs := make([]uint64, 0, len(nb.series))
	for h := range nb.series {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

// bufRecord is a buffered record a scan returns: its key past the name
// prefix and its stored value, aliasing the buffer (never overwritten).
type bufRecord struct {
	hash   uint64
	suffix []byte
	value  []byte
}

func compareRecordKey(hash uint64, suffix []byte, r *bufRecord) int {
	switch {
	case hash < r.hash:
		return -1
	case hash > r.hash:
		return 1
	}
	return bytes.Compare(suffix, r.suffix)
}

// collect appends the records of name prefix np in m whose timestamps are
// in [begin, end), of one series if onlyHash is set, in key order with
// duplicates resolved, leaving out those of log records past visible.
func (m *memBuffer) collect(dst []bufRecord, np []byte, onlyHash *uint64, begin, end int64, visible uint64) []bufRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	nb := m.names[string(np)]
	if nb == nil {
		return dst
	}
	var hashes []uint64
	if onlyHash != nil {
		if nb.series[*onlyHash] == nil {
			return dst
		}
		hashes = []uint64{*onlyHash}
	} else {
		hashes = nb.sortedHashes()
	}
	lo, hi := appendInt64(nil, begin), appendInt64(nil, end)
	for _, h := range hashes {
		sb := nb.series[h]
		sb.orderLocked()
		i := sort.Search(len(sb.entries), func(i int) bool { return bytes.Compare(sb.entries[i].suffix(sb.arena), lo) >= 0 })
		k := sort.Search(len(sb.entries), func(i int) bool { return bytes.Compare(sb.entries[i].suffix(sb.arena), hi) >= 0 })
		sub := seriesBuffer{entries: sb.entries[i:k], arena: sb.arena}
		_ = sub.eachRecord(nb.kind, visible, func(s, v []byte) error {
			dst = append(dst, bufRecord{hash: h, suffix: s, value: v})
			return nil
		})
	}
	return dst
}

// mergeRecords merges record lists of buffers, oldest buffer first, into
// one list in key order with duplicates resolved.
func mergeRecords(kind Kind, lists [][]bufRecord) []bufRecord {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	var all []bufRecord
	for _, l := range lists {
		all = append(all, l...)
	}
	// Stable: among equal keys, older buffers come first.
	slices.SortStableFunc(all, func(a, b bufRecord) int { return compareRecordKey(a.hash, a.suffix, &b) })
	out := all[:0]
	for _, r := range all {
		if n := len(out); n > 0 && out[n-1].hash == r.hash && bytes.Equal(out[n-1].suffix, r.suffix) {
			out[n-1].value = resolve(kind, out[n-1].value, r.value)
			continue
		}
		out = append(out, r)
	}
	return out
}
