package storage

import (
	"context"
	"errors"
	"math"

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
// order (desc: the reverse).
func (e *termEval) ints(tag string, lo, hi int64, desc bool, fn func(value int64, r tsdb.Ref) error) error {
	if lo > hi {
		return nil
	}
	sorted := tagindex.SortSeries(nil, tag, tagindex.SortInts)
	if hi < math.MaxInt64 {
		return e.db.SortedRefs(e.ctx, e.seg, e.name, sorted, lo, hi+1, e.begin, e.end, desc, fn)
	}
	readSorted := func() error {
		return e.db.SortedRefs(e.ctx, e.seg, e.name, sorted, lo, math.MaxInt64, e.begin, e.end, desc, fn)
	}
	maxTerm := tagindex.Series(nil, tag, tagindex.KindInt, tagindex.IntValue(nil, math.MaxInt64))
	readMax := func() error {
		return e.db.IndexRefs(e.ctx, e.seg, e.name, maxTerm, e.begin, e.end, desc, func(r tsdb.Ref) error { return fn(math.MaxInt64, r) })
	}
	first, second := readSorted, readMax
	if desc {
		first, second = readMax, readSorted
	}
	if err := first(); err != nil {
		return err
	}
	return second()
}

func (e *termEval) evalRange(q *termQuery) (refSet, bool, error) {
	if !e.sortedCovered(q.tag) {
		return nil, false, nil
	}
	out := refSet{}
	err := e.ints(q.tag, q.lo, q.hi, false, func(_ int64, r tsdb.Ref) error {
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

// orderable reports whether the segment's sorted index gives the order
// of tag: every write into it kept the tag sorted, and no record holds a
// value of another type.
func (e *termEval) orderable(tag string) (bool, error) {
	if !e.sortedCovered(tag) {
		return false, nil
	}
	other := false
	err := e.db.SortedRefs(e.ctx, e.seg, e.name, tagindex.SortSeries(nil, tag, tagindex.SortOther), math.MinInt64, math.MaxInt64, e.begin, e.end, false,
		func(int64, tsdb.Ref) error { other = true; return errFoundOne })
	if err != nil && !errors.Is(err, errFoundOne) {
		return false, err
	}
	return !other, nil
}

// eachOrdered calls fn with the segment's records in the order of the
// sorted tag (nulls lowest, then ints; desc reverses it) until fn returns
// an error.
func (e *termEval) eachOrdered(tag string, desc bool, fn func(sortedEntry) error) error {
	nulls := func() error {
		return e.db.SortedRefs(e.ctx, e.seg, e.name, tagindex.SortSeries(nil, tag, tagindex.SortNulls), math.MinInt64, math.MaxInt64, e.begin, e.end, desc,
			func(_ int64, r tsdb.Ref) error { return fn(sortedEntry{ref: r, null: true}) })
	}
	ints := func() error {
		return e.ints(tag, math.MinInt64, math.MaxInt64, desc, func(v int64, r tsdb.Ref) error { return fn(sortedEntry{ref: r, value: v}) })
	}
	first, second := nulls, ints
	if desc {
		first, second = ints, nulls
	}
	if err := first(); err != nil {
		return err
	}
	return second()
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

// errOrderDone ends an ordered read at the first record that cannot
// make the cut.
var errOrderDone = errors.New("storage: ordered read done")

// readOrdered reads seg in the order of p.sortTag through its sorted
// index, when it can (orderable), restricted to what p.terms finds when
// the indexes narrow it, looking records up a few at a time and stopping
// at the first that cannot make top's cut; done is false when it cannot,
// and the caller reads the segment otherwise.
func (s *Store) readOrdered(ctx context.Context, db *tsdb.DB, seg tsdb.Segment, p *plan, group string, top *topN,
	visit func(*tsdb.Item) error,
) (done bool, err error) {
	e, ok, err := segmentEval(ctx, db, seg, p.name, p.begin, p.end)
	if err != nil || !ok {
		return false, err
	}
	if ok, err := e.orderable(p.sortTag); err != nil || !ok {
		return false, err
	}
	var only refSet
	if p.terms != nil {
		set, ok, err := e.eval(p.terms)
		switch {
		case err != nil && !errors.Is(err, errTooManyRefs):
			return false, err
		case ok && err == nil:
			only = set
		}
	}
	p.stats.segments++
	p.stats.indexed++
	counted := func(it *tsdb.Item) error {
		p.stats.scanned++
		return visit(it)
	}
	seen := map[tsdb.Ref]struct{}{}
	chunk := make([]tsdb.Ref, 0, lookupChunk)
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := db.Lookup(ctx, seg, p.name, chunk, counted)
		chunk = chunk[:0]
		return err
	}
	err = e.eachOrdered(p.sortTag, p.desc, func(en sortedEntry) error {
		if only != nil {
			if _, in := only[en.ref]; !in {
				return nil
			}
		}
		if _, dup := seen[en.ref]; dup {
			return nil // an earlier value's entry of a record written again
		}
		probe := hit{ts: en.ref.Timestamp, group: group, hash: en.ref.SeriesHash, eid: []byte(en.ref.ElementID), key: en.key()}
		if !top.wants(&probe) {
			if err := flush(); err != nil {
				return err
			}
			return errOrderDone // every later record comes after it
		}
		seen[en.ref] = struct{}{}
		chunk = append(chunk, en.ref)
		size := lookupChunkFull
		if !top.full() {
			size = min(max(top.n-len(top.hits), lookupChunkFull), lookupChunk)
		}
		if len(chunk) >= size {
			return flush()
		}
		return nil
	})
	switch {
	case errors.Is(err, errOrderDone):
		return true, nil
	case err != nil:
		return true, err
	}
	return true, flush()
}
