package route

import (
	"math/bits"
	"slices"
)

// placement is the computed layout of one group: for every shard, the nodes
// holding a copy, primary first and replicas in HRW order.
type placement struct {
	copies   int   // R = min(replicas+1, live nodes)
	assign   []int // S*R node indices; shard s at [s*R : (s+1)*R]
	repaired int   // replicas placed by an augmenting path, not greedily
	overflow int   // replicas placed above their node's quota (see placeReplicas)
}

// builder holds the working state of one group's placement.
type builder struct {
	n, s, r  int
	weighted bool
	ranks    []score // shard sh's HRW order, best first, at [sh*n : (sh+1)*n]
	held     [][]int // per shard, the HRW ranks of its copies, primary first
	load     []int   // copies per node, primaries included
	copies   quota   // bounds load
}

// place computes one group's placement; doc.go states the algorithm and its
// guarantees. sc must hold at least one node.
func place(sc *scorer, group string, shardNum, replicas uint32) placement {
	n, s := len(sc.nodes), int(shardNum)
	r := int(min(uint64(replicas)+1, uint64(n)))
	b := &builder{
		n: n, s: s, r: r, weighted: sc.weighted,
		ranks:  make([]score, s*n),
		held:   make([][]int, s),
		load:   make([]int, n),
		copies: newQuota(sc.weights, uint64(s*r), uint64(s)),
	}
	for sh := range s {
		sc.rank(b.ranks[sh*n:sh*n:(sh+1)*n], group, uint32(sh))
		b.held[sh] = make([]int, 0, r)
	}
	// Primaries: every shard proposes to nodes in its HRW order and the
	// strongest proposal anywhere is decided first, i.e. all (shard, node)
	// pairs are walked once, best score first. Walking pairs rather than
	// shards lets the strongest preferences win regardless of shard number;
	// of the orders tried (shard index, shard hash, best score per shard,
	// rank-major) it measured the least movement on joins and leaves. It
	// always completes: room only shrinks as nodes fill, the quotas sum to S
	// and a shard's pairs cover every node, so a shard passed over by all its
	// pairs would mean every node was already full.
	primaryQuota := newQuota(sc.weights, uint64(s), uint64(s))
	primaries := make([]int, n)
	pq := b.proposals()
	for pq.len() > 0 {
		sh, k := pq.peek()
		node := b.node(sh, k)
		if !primaryQuota.room(node, primaries[node]) {
			pq.advance()
			continue
		}
		primaryQuota.use(node, primaries[node])
		primaries[node]++
		b.take(sh, k)
		pq.pop()
	}

	p := placement{copies: r, assign: make([]int, s*r)}
	if r > 1 {
		p.repaired, p.overflow = b.placeReplicas()
	}
	for sh := range s {
		h := b.held[sh]
		slices.Sort(h[1:]) // replicas in HRW order; the primary stays first
		for k, rank := range h {
			p.assign[sh*r+k] = b.node(sh, rank)
		}
	}
	return p
}

// placeReplicas adds copies until every shard has r on distinct nodes,
// keeping each node's copies (primaries included) within the copy quota.
// Greedy over the pairs first, as for primaries; a shard left short is
// completed along an augmenting path that shifts other shards' replicas to
// nodes with room. Should no path exist, the best eligible node takes the
// copy above its quota and the copy counts as overflow. Overflow never
// happened in 100k random trials (N <= 16, S <= 40, any r, weights 1..4);
// TestPlacementProperties asserts it stays zero.
func (b *builder) placeReplicas() (repaired, overflow int) {
	pq := b.proposals()
	for pq.len() > 0 {
		sh, k := pq.peek()
		node := b.node(sh, k)
		if b.copies.room(node, b.load[node]) && b.holdsAt(sh, node) < 0 {
			b.take(sh, k)
			if len(b.held[sh]) == b.r {
				pq.pop()
				continue
			}
		}
		pq.advance()
	}
	for sh := range b.s {
		for len(b.held[sh]) < b.r {
			if b.augment(sh) {
				repaired++
				continue
			}
			overflow++
			for k := range b.n {
				if b.holdsAt(sh, b.node(sh, k)) < 0 {
					b.take(sh, k)
					break
				}
			}
		}
	}
	return repaired, overflow
}

// augment gives shard start one more replica along a shortest augmenting
// path: start takes node j0, a shard that held j0 as a replica moves that
// copy to j1, and so on until a node with room takes the last move. Only the
// start shard and that last node change counts. Primaries never move. Nodes
// are tried in each shard's HRW order and shards in index order, so the path,
// like the rest of the table, is deterministic.
func (b *builder) augment(start int) bool {
	type step struct{ shard, gives int } // shard takes the node and gives up `gives` (-1: nothing)
	from := make([]step, b.n)
	seen := make([]bool, b.n)
	var queue []int
	visit := func(sh, gives int) int {
		for k := range b.n {
			node := b.node(sh, k)
			if seen[node] || b.holdsAt(sh, node) >= 0 {
				continue
			}
			seen[node] = true
			from[node] = step{sh, gives}
			if b.copies.room(node, b.load[node]) {
				return node
			}
			queue = append(queue, node)
		}
		return -1
	}
	end := visit(start, -1)
	for end < 0 && len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		for t := range b.s {
			if i := b.holdsAt(t, j); i > 0 { // i == 0 is t's primary: fixed
				if end = visit(t, j); end >= 0 {
					break
				}
			}
		}
	}
	if end < 0 {
		return false
	}
	b.copies.use(end, b.load[end])
	b.load[end]++
	for node := end; ; {
		st := from[node]
		if st.gives < 0 {
			b.held[st.shard] = append(b.held[st.shard], b.rankOf(st.shard, node))
			return true
		}
		b.held[st.shard][b.holdsAt(st.shard, st.gives)] = b.rankOf(st.shard, node)
		node = st.gives
	}
}

func (b *builder) node(sh, k int) int { return b.ranks[sh*b.n+k].node }

func (b *builder) rankOf(sh, node int) int {
	for k := range b.n {
		if b.node(sh, k) == node {
			return k
		}
	}
	panic("route: node missing from a shard's ranking")
}

// holdsAt returns the index in held[sh] of node's copy, or -1.
func (b *builder) holdsAt(sh, node int) int {
	for i, k := range b.held[sh] {
		if b.node(sh, k) == node {
			return i
		}
	}
	return -1
}

func (b *builder) take(sh, k int) {
	b.held[sh] = append(b.held[sh], k)
	node := b.node(sh, k)
	b.copies.use(node, b.load[node])
	b.load[node]++
}

// quota splits total units over nodes in proportion to weight, as tightly as
// integers allow: node i may hold floor(share_i) or one more, and the extras
// number exactly total - Σ floor(share_i), so the loads of a full placement
// are pinned to floor or ceil of the share. Who gets an extra is decided by
// who asks first, so the greedy's preferences, not a rounding rule, pick them.
type quota struct {
	base  []int  // floor of the node's share
	frac  []bool // share is not an integer: the node may take one extra
	extra int    // extras not yet handed out
}

func newQuota(weights []uint64, total, limit uint64) quota {
	n := len(weights)
	q := quota{base: make([]int, n), frac: make([]bool, n), extra: int(total)}
	// Water-fill: a node whose share reaches limit (it holds a shard at most
	// once) is pinned there and the rest is re-shared among the others; since
	// total <= limit*n this ends with every share within limit.
	pinned := make([]bool, n)
	for more := true; more; {
		more = false
		var sum uint64
		for i, w := range weights {
			if !pinned[i] {
				sum += w
			}
		}
		for i, w := range weights {
			if pinned[i] || !mulGE(total, w, limit, sum) {
				continue
			}
			pinned[i], more = true, true
			q.base[i] = int(limit)
			total -= limit
		}
		if more {
			continue
		}
		for i, w := range weights {
			if !pinned[i] {
				hi, lo := bits.Mul64(total, w) // total*w may exceed 64 bits
				base, rem := bits.Div64(hi, lo, sum)
				q.base[i], q.frac[i] = int(base), rem > 0
			}
		}
	}
	for _, base := range q.base {
		q.extra -= base
	}
	return q
}

// mulGE reports a*b >= c*d, exactly.
func mulGE(a, b, c, d uint64) bool {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	return h1 > h2 || (h1 == h2 && l1 >= l2)
}

// room reports whether node i, holding load units, may take one more.
func (q *quota) room(i, load int) bool {
	return load < q.base[i] || (load == q.base[i] && q.frac[i] && q.extra > 0)
}

// use records that node i, holding load units, takes one more.
func (q *quota) use(i, load int) {
	if load >= q.base[i] {
		q.extra--
	}
}

// proposalQueue walks a group's (shard, node) pairs best score first without
// sorting them all: a max-heap holds, per shard still placing copies, the
// next node in its HRW order. Callers stop a shard (pop) once it is placed,
// so pairs no placement would use are never visited.
type proposalQueue struct {
	b    *builder
	next []int // per shard, the HRW rank it proposes next
	heap []int // shards, best proposal at 0
}

func (b *builder) proposals() *proposalQueue {
	q := &proposalQueue{b: b, next: make([]int, b.s), heap: make([]int, b.s)}
	for sh := range q.heap {
		q.heap[sh] = sh
	}
	for i := len(q.heap)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
	return q
}

func (q *proposalQueue) len() int { return len(q.heap) }

// peek returns the best pending proposal: a shard and the HRW rank of the
// node it proposes to.
func (q *proposalQueue) peek() (shard, rank int) { return q.heap[0], q.next[q.heap[0]] }

// advance moves the best shard on to its next node, dropping it when it has
// proposed to every node.
func (q *proposalQueue) advance() {
	sh := q.heap[0]
	if q.next[sh]++; q.next[sh] == q.b.n {
		q.pop()
		return
	}
	q.down(0)
}

// pop drops the best shard.
func (q *proposalQueue) pop() {
	last := len(q.heap) - 1
	q.heap[0] = q.heap[last]
	q.heap = q.heap[:last]
	if last > 0 {
		q.down(0)
	}
}

func (q *proposalQueue) before(x, y int) bool {
	sx, sy := q.heap[x], q.heap[y]
	a := &q.b.ranks[sx*q.b.n+q.next[sx]]
	c := &q.b.ranks[sy*q.b.n+q.next[sy]]
	if o := a.compare(c, q.b.weighted); o != 0 {
		return o < 0
	}
	return sx < sy // equal scores: only if two shards' hashes collide
}

func (q *proposalQueue) down(i int) {
	for {
		best := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(q.heap) && q.before(c, best) {
				best = c
			}
		}
		if best == i {
			return
		}
		q.heap[i], q.heap[best] = q.heap[best], q.heap[i]
		i = best
	}
}
