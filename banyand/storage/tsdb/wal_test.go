package tsdb

import (
	"os"
	"path/filepath"
	"testing"
)

// A log file's contents can be anything a broken disk returns: replaying
// it fails with an error or applies what is valid, and never panics. The
// input is tried both as a file (framing and checksums first) and as one
// record's payload (the op parser, which checksums would otherwise
// shield). The seeds are a real batch's record and a drop.
func FuzzReplayLog(f *testing.F) {
	db := &DB{segs: newSegmentIndex()}
	rec := db.appendWriteRecord(nil, []Write{
		streamWrite("a", 1, "1", "v"),
		measureWrite("b", 2, 3, "m"),
	})
	l := &writeLog{num: 1}
	framed := func(p []byte) []byte {
		l.pending = l.pending[:0]
		l.appendedSeq = 0
		if _, err := l.append(p); err != nil {
			f.Fatal(err)
		}
		return append([]byte(nil), l.pending...)
	}
	f.Add(framed(rec))
	f.Add(rec)
	drop := appendBytesLP(appendBytesLP([]byte{opDrop}, segmentPrefix(nil, KindStream, "g", 0)), segmentMetaKey(nil, KindStream, "g", 0))
	f.Add(framed(drop))
	f.Add(append(framed(rec), 1, 2, 3))
	path := filepath.Join(f.TempDir(), walName(1)) // a worker runs inputs one at a time
	f.Fuzz(func(t *testing.T, file []byte) {
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		segs := newSegmentIndex()
		onSegment := func(op byte, key, value []byte) error {
			kind, group, start, err := parseSegmentMetaKey(key)
			if err != nil {
				return err
			}
			if op == opSegment && len(value) == 8 {
				segs.ensure(Segment{Kind: kind, Group: group, Start: start, End: readInt64(value)})
			}
			return nil
		}
		m := newMemBuffer()
		_, _ = readWAL(path, 1, func(p []byte) error { return m.applyOps(p, 0, onSegment) })
		_ = m.applyOps(file, 0, onSegment)
		names, _ := m.sorted()
		for _, nb := range names {
			_ = m.collect(nil, nb.prefix, nil, -1<<62, 1<<62, allVisible)
			for _, h := range nb.sortedHashes() {
				_ = nb.series[h].eachRecord(nb.kind, allVisible, func(_, _ []byte) error { return nil })
			}
		}
	})
}
