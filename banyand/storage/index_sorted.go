package storage

import (
	"context"
	"errors"
	"math"
	"slices"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/tagindex"
)

// Sorted indexes (docs/design/indexes.md) keep an int tag's values in
// order: ranges read the values in theirs, and an order by the tag reads
// a segment's records in output order and stops at the first that cannot
// make the cut. The largest int has no place in a sorted series' range
// (bounds are exclusive), so the tag's term of it is read too.

// sortedCovered reports whether every write into the segment kept tag
// sorted.
func (e *termEval) sortedCovered(tag string) bool {
	for _, s := range e.specs {
		if !s.CoversSorted(tag) {
			return false
		}
	}
	return true
}

// sortedEntry is one record of a sorted tag and its value.
type sortedEntry struct {
	ref   tsdb.Ref
	value int64
	null  bool
}

// key is the entry's order key as a record's would be read.
func (e *sortedEntry) key() *modelv1.TagValue {
	if e.null {
		return nil
	}
	return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: e.value}}}
}

// ints calls fn with the records whose value of tag is in [lo, hi], in
// order.
func (e *termEval) ints(tag string, lo, hi int64, fn func(value int64, r tsdb.Ref) error) error {
	if lo > hi {
		return nil
	}
	if hi < math.MaxInt64 {
		return e.db.SortedRefs(e.ctx, e.seg, e.name, tagindex.SortSeries(nil, tag, tagindex.SortInts), lo, hi+1, e.begin, e.end, fn)
	}
	err := e.db.SortedRefs(e.ctx, e.seg, e.name, tagindex.SortSeries(nil, tag, tagindex.SortInts), lo, math.MaxInt64, e.begin, e.end, fn)
	if err != nil {
		return err
	}
	maxTerm := tagindex.Series(nil, tag, tagindex.KindInt, tagindex.IntValue(nil, math.MaxInt64))
	return e.db.IndexRefs(e.ctx, e.seg, e.name, maxTerm, e.begin, e.end, func(r tsdb.Ref) error { return fn(math.MaxInt64, r) })
}

func (e *termEval) evalRange(q *termQuery) (refSet, bool, error) {
	if !e.sortedCovered(q.tag) {
		return nil, false, nil
	}
	out := refSet{}
	err := e.ints(q.tag, q.lo, q.hi, func(_ int64, r tsdb.Ref) error {
		out[r] = struct{}{}
		if len(out) > maxIndexRefs {
			return errTooManyRefs
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// orderedEntries returns the records of the segment in the order of the
// sorted tag (nulls lowest, then ints; p.desc reverses it), restricted to
// those terms find when it can narrow them; ok is false when the index
// cannot give that order: a write into the segment did not keep the tag
// sorted, or a record holds a value of another type.
func (e *termEval) orderedEntries(tag string, desc bool, terms *termQuery) ([]sortedEntry, bool, error) {
	if !e.sortedCovered(tag) {
		return nil, false, nil
	}
	other := false
	err := e.db.SortedRefs(e.ctx, e.seg, e.name, tagindex.SortSeries(nil, tag, tagindex.SortOther), math.MinInt64, math.MaxInt64, e.begin, e.end,
		func(int64, tsdb.Ref) error { other = true; return errFoundOne })
	if other || err != nil && !errors.Is(err, errFoundOne) {
		return nil, false, err
	}
	var only refSet
	if terms != nil {
		set, ok, err := e.eval(terms)
		switch {
		case err != nil && !errors.Is(err, errTooManyRefs):
			return nil, false, err
		case ok && err == nil:
			only = set
		}
	}
	var out []sortedEntry
	keep := func(r tsdb.Ref, value int64, null bool) {
		if only != nil {
			if _, in := only[r]; !in {
				return
			}
		}
		out = append(out, sortedEntry{ref: r, value: value, null: null})
	}
	err = e.db.SortedRefs(e.ctx, e.seg, e.name, tagindex.SortSeries(nil, tag, tagindex.SortNulls), math.MinInt64, math.MaxInt64, e.begin, e.end,
		func(_ int64, r tsdb.Ref) error { keep(r, 0, true); return nil })
	if err != nil {
		return nil, false, err
	}
	err = e.ints(tag, math.MinInt64, math.MaxInt64, func(v int64, r tsdb.Ref) error {
		keep(r, v, false)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if desc {
		slices.Reverse(out)
	}
	return out, true, nil
}

// errFoundOne stops a scan that needs to know only whether there is a
// record.
var errFoundOne = errors.New("storage: found one")

// lookupChunk bounds how many records an ordered read looks up at a time
// between checks of whether the next can still make the cut: as many as
// the cut still takes, else a few.
const (
	lookupChunk     = 64
	lookupChunkFull = 4
)

// readOrdered reads seg in the order of p.sortTag through its sorted
// index, when it can (see orderedEntries), stopping at the first record
// that cannot make top's cut; done is false when it cannot, and the
// caller reads the segment otherwise.
func (s *Store) readOrdered(ctx context.Context, db *tsdb.DB, seg tsdb.Segment, p *plan, group string, top *topN,
	visit func(*tsdb.Item) error,
) (done bool, err error) {
	e, ok, err := segmentEval(ctx, db, seg, p.name, p.begin, p.end)
	if err != nil || !ok {
		return false, err
	}
	entries, ok, err := e.orderedEntries(p.sortTag, p.desc, p.terms)
	if err != nil || !ok {
		return false, err
	}
	p.stats.segments++
	p.stats.indexed++
	counted := func(it *tsdb.Item) error {
		p.stats.scanned++
		return visit(it)
	}
	seen := make(map[tsdb.Ref]struct{}, min(len(entries), p.n))
	chunk := make([]tsdb.Ref, 0, lookupChunk)
	for i := 0; i < len(entries); {
		next := &entries[i]
		probe := hit{ts: next.ref.Timestamp, group: group, hash: next.ref.SeriesHash, eid: []byte(next.ref.ElementID), key: next.key()}
		if !top.wants(&probe) {
			break // every later record comes after it
		}
		chunk = chunk[:0]
		size := lookupChunkFull
		if !top.full() {
			size = min(max(top.n-len(top.hits), lookupChunkFull), lookupChunk)
		}
		for ; i < len(entries) && len(chunk) < size; i++ {
			r := entries[i].ref
			if _, dup := seen[r]; dup {
				continue // an earlier value's entry of a record written again
			}
			seen[r] = struct{}{}
			chunk = append(chunk, r)
		}
		if err := db.Lookup(ctx, seg, p.name, chunk, counted); err != nil {
			return true, err
		}
	}
	return true, nil
}
