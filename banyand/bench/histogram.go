package bench

import (
	"math/bits"
	"time"
)

// histogram counts durations in microseconds in log-linear buckets, as HDR
// histograms do: values below 2^subBits µs are exact, larger ones fall in
// one of 2^subBits sub-buckets per power of two, so a reported quantile is
// within 1/2^subBits (< 0.8 %) of the true value. Fixed memory (64 KiB),
// whatever the run length. Not safe for concurrent use: each receive loop
// owns one, and they are merged at the end.
type histogram struct {
	counts [64 << subBits]uint64
	total  uint64
	max    uint64
}

const subBits = 7

func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	exp := bits.Len64(v) - subBits - 1
	return (exp+1)<<subBits | int(v>>uint(exp))&(1<<subBits-1)
}

// bucketHigh is the largest value that falls in bucket idx.
func bucketHigh(idx int) uint64 {
	exp := idx>>subBits - 1
	if exp <= 0 {
		return uint64(idx)
	}
	low := uint64(idx&(1<<subBits-1)|1<<subBits) << uint(exp)
	return low + 1<<uint(exp) - 1
}

func (h *histogram) record(d time.Duration) {
	us := uint64(max(d.Microseconds(), 0))
	h.counts[bucketOf(us)]++
	h.total++
	h.max = max(h.max, us)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// quantile returns the value at q (0..1) in microseconds: the upper edge
// of its bucket, never above the recorded maximum.
func (h *histogram) quantile(q float64) uint64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total) + 0.5)
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketHigh(i), h.max)
		}
	}
	return h.max
}
