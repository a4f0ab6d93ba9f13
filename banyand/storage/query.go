package storage

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/banyand-io/banyand/pkg/wire"

	"google.golang.org/protobuf/types/known/timestamppb"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
)

// errInvalidQuery wraps queue.ErrInvalidMessage: re-sending the same query
// cannot succeed.
var errInvalidQuery = fmt.Errorf("%w: invalid query", queue.ErrInvalidMessage)

// queryError makes every unsupported-feature error also an invalid message
// (a retry cannot help) while keeping ErrUnimplemented visible to errors.Is.
func queryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnimplemented) && !errors.Is(err, queue.ErrInvalidMessage):
		return fmt.Errorf("%w: %w", queue.ErrInvalidMessage, err)
	default:
		return mapClosed(err)
	}
}

// plan is what a stream or measure query asks of the segments.
type plan struct {
	kind       tsdb.Kind
	groups     []string
	name       string
	begin, end int64 // [begin, end), Unix nanoseconds: the request's end + 1
	desc       bool
	n          int    // keep the first n in output order: offset + limit
	series     []byte // the series key when the entity is fixed, else nil (scan)
	// terms, when set and no series is, reads from each segment the
	// records its tag indexes find instead of every record (index.go).
	terms *termQuery
	// sortTag, when set, is the order tag (an int tag): a segment whose
	// sorted index holds it is read in its order (index_sorted.go).
	sortTag string
	// match decodes a payload and applies the criteria; nil keeps all.
	match func(payload []byte) (bool, error)
	// orderKey, when set, orders by a tag's value (see orderedBy) instead
	// of by time: it reads the value from a payload.
	orderKey func(payload []byte) (*modelv1.TagValue, error)
	stats    scanStats // what run did, for the execution trace
}

// common validates the parts of stream and measure queries that are alike.
func (p *plan) common(groups []string, name string, tr *modelv1.TimeRange, order *modelv1.QueryOrder,
	offset, limit, defaultLimit uint32,
) error {
	if len(groups) == 0 {
		return fmt.Errorf("%w: no group", errInvalidQuery)
	}
	if name == "" {
		return fmt.Errorf("%w: no name", errInvalidQuery)
	}
	if tr.GetBegin() == nil || tr.GetEnd() == nil {
		return fmt.Errorf("%w: time range with begin and end is required", errInvalidQuery)
	}
	if err := schema.CheckQueryWindow(offset, limit); err != nil {
		return fmt.Errorf("%w: %w", errInvalidQuery, err)
	}
	// A group named twice would return its data twice.
	p.groups, p.name = slices.Compact(slices.Sorted(slices.Values(groups))), name
	// BanyanDB's time ranges hold both ends (a range whose begin is its
	// end is one point in time); p.end is exclusive. A range that ends
	// before it begins holds nothing.
	p.begin, p.end = queryNanos(tr.GetBegin()), queryNanos(tr.GetEnd())
	if p.end < math.MaxInt64 {
		p.end++
	}
	// BanyanDB orders by time ascending unless told SORT_DESC.
	p.desc = order.GetSort() == modelv1.Sort_SORT_DESC
	if limit == 0 {
		limit = defaultLimit
	}
	p.n = int(min(uint64(offset)+uint64(limit), math.MaxInt32))
	return nil
}

// queryNanos converts a query bound to Unix nanoseconds (as protobuf
// reads it), saturating outside the storable range (a query up to year
// 9999 means "until the end").
func queryNanos(ts *timestamppb.Timestamp) int64 {
	if ns, ok := wire.UnixNano(ts.GetSeconds(), ts.GetNanos()); ok {
		return ns
	}
	if ts.GetSeconds() < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// hit is a record kept for the response. Its slices are copies.
type hit struct {
	ts        int64
	group     string
	hash      uint64
	eid       []byte
	version   int64
	seriesKey []byte // streams: the liaison tells copies of one element apart by it
	payload   []byte
	key       *modelv1.TagValue // the order tag's value (plan.orderKey), else nil
}

// compareByKey orders by the order tag's value, values of another type
// than the first and nulls last, then as compareHits.
func compareByKey(a, b *hit) int {
	if c := schema.CompareTagKeys(a.key, b.key); c != 0 {
		return c
	}
	return compareHits(a, b)
}

// compareHits orders by time, then group, series and element id, so equal
// timestamps still come out in a stable order.
func compareHits(a, b *hit) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	if c := cmp.Compare(a.group, b.group); c != 0 {
		return c
	}
	if c := cmp.Compare(a.hash, b.hash); c != 0 {
		return c
	}
	return bytes.Compare(a.eid, b.eid)
}

// topN keeps the n hits that come first in output order. The heap's root
// is the one that comes last, so it is the one to evict.
type topN struct {
	hits    []*hit
	n       int
	desc    bool
	compare func(a, b *hit) int // compareHits or compareByKey
}

func (t *topN) before(a, b *hit) bool {
	c := t.compare(a, b)
	if t.desc {
		return c > 0
	}
	return c < 0
}

func (t *topN) Len() int           { return len(t.hits) }
func (t *topN) Less(i, j int) bool { return t.before(t.hits[j], t.hits[i]) }
func (t *topN) Swap(i, j int)      { t.hits[i], t.hits[j] = t.hits[j], t.hits[i] }
func (t *topN) Push(x any)         { t.hits = append(t.hits, x.(*hit)) }
func (t *topN) Pop() any {
	h := t.hits[len(t.hits)-1]
	t.hits = t.hits[:len(t.hits)-1]
	return h
}

func (t *topN) full() bool { return len(t.hits) >= t.n }

// wants reports whether h would make the cut.
func (t *topN) wants(h *hit) bool { return !t.full() || t.before(h, t.hits[0]) }

func (t *topN) add(h *hit) {
	if !t.full() {
		heap.Push(t, h)
		return
	}
	t.hits[0] = h
	heap.Fix(t, 0)
}

// sorted returns the kept hits in output order.
func (t *topN) sorted() []*hit {
	out := slices.Clone(t.hits)
	slices.SortFunc(out, func(a, b *hit) int {
		if t.desc {
			return t.compare(b, a)
		}
		return t.compare(a, b)
	})
	return out
}

// readSegment calls visit with the records of sc in seg that a query
// may select: those the tag indexes find with terms, when set and they can
// answer for the segment, else every record of the scan. A scan of one
// series (an entity seek) is not narrowed further.
func (s *Store) readSegment(ctx context.Context, db *tsdb.DB, seg tsdb.Segment, sc tsdb.Scan, terms *termQuery,
	stats *scanStats, visit func(*tsdb.Item) error,
) error {
	stats.segments++
	counted := func(it *tsdb.Item) error {
		stats.scanned++
		return visit(it)
	}
	if terms != nil && sc.SeriesKey == nil {
		refs, ok, err := s.indexRefs(ctx, db, seg, sc.Name, sc.Begin, sc.End, terms)
		if err != nil {
			return err
		}
		if ok {
			stats.indexed++
			return db.Lookup(ctx, seg, sc.Name, refs, counted)
		}
	}
	return db.ScanSegment(ctx, seg, sc, counted)
}

// run executes p and returns at most p.n hits in output order.
//
// Segments are disjoint in time, so they are visited in output order and the
// scan stops at the first segment that cannot beat the worst hit kept. Within
// a segment keys are ordered by series first, so every record in the time
// range is visited; the cut is decided on the key before a value is decoded.
func (s *Store) run(ctx context.Context, p *plan) ([]*hit, error) {
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	defer func() { s.countReads(p.stats) }()
	top := &topN{n: p.n, desc: p.desc, compare: compareHits}
	if p.orderKey != nil {
		top.compare = compareByKey
	}
	if p.n == 0 || p.begin >= p.end {
		return nil, nil
	}
	for _, group := range p.groups {
		segs := db.SegmentsIn(p.kind, group, p.begin, p.end)
		if p.desc {
			slices.Reverse(segs)
		}
		for _, seg := range segs {
			if top.full() && p.orderKey == nil {
				worst := top.hits[0].ts
				if (!p.desc && seg.Start > worst) || (p.desc && seg.End <= worst) {
					break
				}
			}
			probe := hit{group: group}
			visit := func(it *tsdb.Item) error {
				probe.ts, probe.hash, probe.eid = it.Timestamp, it.SeriesHash, it.ElementID
				if p.orderKey != nil {
					key, err := p.orderKey(it.Payload)
					if err != nil {
						return err
					}
					probe.key = key
				}
				if !top.wants(&probe) {
					return nil
				}
				if p.match != nil {
					ok, err := p.match(it.Payload)
					if err != nil || !ok {
						return err
					}
				}
				p.stats.matched++
				h := &hit{
					ts: it.Timestamp, group: group, hash: it.SeriesHash,
					eid: bytes.Clone(it.ElementID), version: it.Version, payload: bytes.Clone(it.Payload), key: probe.key,
				}
				if p.kind == tsdb.KindStream {
					h.seriesKey = bytes.Clone(it.SeriesKey)
				}
				top.add(h)
				return nil
			}
			if p.sortTag != "" && p.series == nil {
				done, err := s.readOrdered(ctx, db, seg, p, group, top, visit)
				if err != nil {
					return nil, err
				}
				if done {
					continue
				}
			}
			sc := tsdb.Scan{Name: p.name, Begin: p.begin, End: p.end, SeriesKey: p.series}
			if err := s.readSegment(ctx, db, seg, sc, p.terms, &p.stats, visit); err != nil {
				return nil, err
			}
		}
	}
	return top.sorted(), nil
}
