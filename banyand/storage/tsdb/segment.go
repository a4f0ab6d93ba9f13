package tsdb

import (
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// DefaultSegmentInterval is the segment length of a group whose options give
// none (BanyanDB's default segment_interval is one day).
const DefaultSegmentInterval = 24 * time.Hour

// Segment is a time range [Start, End) of one group's data of one kind,
// stored under one key prefix so that dropping it is one range deletion.
// Start and End are Unix nanoseconds.
type Segment struct {
	Kind  Kind
	Group string
	Start int64
	End   int64
}

func (s Segment) overlaps(begin, end int64) bool { return s.Start < end && s.End > begin }

type groupKey struct {
	kind  Kind
	group string
}

// segmentIndex is the in-memory list of every group's segments, sorted by
// start and never overlapping. It is loaded from the segment records at open
// and kept in step by writes (which add) and retention (which removes).
type segmentIndex struct {
	mu     sync.Mutex // guards groups; held only for slice work, never for I/O
	groups map[groupKey][]Segment
}

func newSegmentIndex() *segmentIndex {
	return &segmentIndex{groups: make(map[groupKey][]Segment)}
}

// load adds a segment read from disk.
func (x *segmentIndex) load(s Segment) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := groupKey{s.Kind, s.Group}
	list := x.groups[k]
	i := sort.Search(len(list), func(i int) bool { return list[i].Start >= s.Start })
	x.groups[k] = slices.Insert(list, i, s)
}

// ensure adds s unless a segment with its start is known already (replay
// finds the segment records of the log's writes).
func (x *segmentIndex) ensure(s Segment) {
	x.mu.Lock()
	k := groupKey{s.Kind, s.Group}
	known := slices.ContainsFunc(x.groups[k], func(o Segment) bool { return o.Start == s.Start })
	x.mu.Unlock()
	if !known {
		x.load(s)
	}
}

// forget removes the segment of kind and group starting at start, if known.
func (x *segmentIndex) forget(kind Kind, group string, start int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := groupKey{kind, group}
	list := slices.DeleteFunc(x.groups[k], func(o Segment) bool { return o.Start == start })
	if len(list) == 0 {
		delete(x.groups, k)
		return
	}
	x.groups[k] = list
}

// assign returns the segment that holds ts, creating it if none does.
//
// An existing segment always wins, so a redelivered write lands in the same
// segment (and overwrites itself) even after the group's interval changed. A
// new segment is aligned to a multiple of interval since the Unix epoch (UTC)
// and clipped so that it never overlaps its neighbours.
func (x *segmentIndex) assign(kind Kind, group string, ts int64, interval time.Duration) Segment {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := groupKey{kind, group}
	list := x.groups[k]
	i := sort.Search(len(list), func(i int) bool { return list[i].End > ts })
	if i < len(list) && list[i].Start <= ts {
		return list[i]
	}
	iv := int64(interval)
	start := ts / iv * iv
	if ts%iv < 0 {
		start -= iv
	}
	end := start + iv
	if end < start { // overflow near the end of time
		end = math.MaxInt64
	}
	if i > 0 && list[i-1].End > start {
		start = list[i-1].End
	}
	if i < len(list) && list[i].Start < end {
		end = list[i].Start
	}
	s := Segment{Kind: kind, Group: group, Start: start, End: end}
	x.groups[k] = slices.Insert(list, i, s)
	return s
}

// overlapping returns a copy of the group's segments that overlap
// [begin, end), in ascending time order.
func (x *segmentIndex) overlapping(kind Kind, group string, begin, end int64) []Segment {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []Segment
	for _, s := range x.groups[groupKey{kind, group}] {
		if s.overlaps(begin, end) {
			out = append(out, s)
		}
	}
	return out
}

// expired returns the segments of groups with a TTL whose whole range is
// older than now - ttl.
func (x *segmentIndex) expired(now time.Time, ttlByGroup map[string]time.Duration) []Segment {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []Segment
	for k, list := range x.groups {
		if k.kind == KindProperty {
			continue // properties live until deleted: their one segment is at time 0
		}
		ttl, ok := ttlByGroup[k.group]
		if !ok || ttl <= 0 {
			continue
		}
		cutoff := now.Add(-ttl).UnixNano()
		for _, s := range list {
			if s.End > cutoff {
				break // sorted by start, and segments do not overlap
			}
			out = append(out, s)
		}
	}
	return out
}

func (x *segmentIndex) remove(s Segment) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := groupKey{s.Kind, s.Group}
	list := x.groups[k]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(x.groups, k)
		return
	}
	x.groups[k] = list
}

// all returns every segment, for tests and diagnostics.
func (x *segmentIndex) all() []Segment {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []Segment
	for _, list := range x.groups {
		out = append(out, list...)
	}
	slices.SortFunc(out, func(a, b Segment) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		if a.Group != b.Group {
			if a.Group < b.Group {
				return -1
			}
			return 1
		}
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	return out
}
