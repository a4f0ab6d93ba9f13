package route

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// score is one node's rendezvous (HRW) score for one (group, shard).
//
// Weighted HRW ranks nodes by w / -ln(u), u = hash/2^64 (the "-w/ln(u)" trick:
// node i wins a shard with probability w_i/Σw, and a node joining or leaving
// only changes the winner of shards it wins or loses). The logarithm is
// computed in fixed point with integer operations, never float64: math.Log and
// FMA contraction differ between architectures by an ulp, and two liaisons on
// amd64 and arm64 must still compute the same table bit for bit.
type score struct {
	hash   uint64 // xxhash64(group, shard, node name)
	negLog uint64 // -log2(u) in Q32.32; only set when the node set is weighted
	weight uint64
	node   int // index into the table's name-sorted node slice
}

// compare orders a before b (-1) when a outranks b. With equal weights,
// w/-log2(u) is monotone in the hash, so comparing hashes gives the same
// order without computing logarithms; ties fall to the hash
// and then the node index, so the order is total and the same everywhere.
// It returns 0 only for the same node's score of colliding hashes.
func (a *score) compare(b *score, weighted bool) int {
	if weighted {
		// a.w/a.L > b.w/b.L  <=>  a.w*b.L > b.w*a.L, exact in 128 bits.
		ah, al := bits.Mul64(a.weight, b.negLog)
		bh, bl := bits.Mul64(b.weight, a.negLog)
		switch {
		case ah != bh:
			return cmp.Compare(bh, ah)
		case al != bl:
			return cmp.Compare(bl, al)
		}
	}
	if a.hash != b.hash {
		return cmp.Compare(b.hash, a.hash)
	}
	return cmp.Compare(a.node, b.node)
}

// scorer hashes (group, shard, node) triples with one reused buffer.
type scorer struct {
	nodes    []Node
	weights  []uint64
	weighted bool
	buf      []byte
}

func newScorer(nodes []Node) *scorer {
	s := &scorer{nodes: nodes, weights: make([]uint64, len(nodes))}
	for i, n := range nodes {
		s.weights[i] = uint64(n.weight())
		if s.weights[i] != s.weights[0] {
			s.weighted = true
		}
	}
	return s
}

// rank fills dst with every node's score for (group, shard), best first.
// The hash input is uvarint(len(group)) group shard:4 node: the group is
// length-prefixed and the node name runs to the end, so no two triples
// share an input.
func (s *scorer) rank(dst []score, group string, shard uint32) []score {
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(len(group)))
	s.buf = append(s.buf, group...)
	s.buf = binary.BigEndian.AppendUint32(s.buf, shard)
	prefix := len(s.buf)
	dst = dst[:0]
	for i, n := range s.nodes {
		s.buf = append(s.buf[:prefix], n.Name...)
		sc := score{hash: xxhash.Sum64(s.buf), weight: s.weights[i], node: i}
		if s.weighted {
			sc.negLog = negLog2(sc.hash)
		}
		dst = append(dst, sc)
	}
	slices.SortFunc(dst, func(a, b score) int { return a.compare(&b, s.weighted) })
	return dst
}

// negLog2 returns -log2(u) for u = max(h,1)/2^64, in Q32.32 fixed point,
// truncated. The result is at least 1 (so a score never divides by zero) and
// non-increasing in h (so equal weights rank by hash). Fractional bits come
// from repeated squaring of the mantissa, one bit per step; 32 of them keep
// the error near 2^-32 of a score, far below any weight ratio that matters.
func negLog2(h uint64) uint64 {
	const fracBits = 32
	x := max(h, 1)
	intPart := bits.Len64(x) - 1 // floor(log2 x), 0..63
	m := x << (63 - intPart)     // mantissa in [1,2) as Q1.63
	var frac uint64
	for range fracBits {
		hi, lo := bits.Mul64(m, m) // m² in Q2.126
		frac <<= 1
		if hi >= 1<<63 { // m² >= 2: emit 1, halve
			frac |= 1
			m = hi
		} else {
			m = hi<<1 | lo>>63
		}
	}
	lg := uint64(intPart)<<fracBits | frac // log2(x) < 64
	return 64<<fracBits - lg
}
