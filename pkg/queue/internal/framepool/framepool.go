// Package framepool pools the byte buffers that hold whole cluster-protocol
// frames, a few hundred kilobytes each. Allocating one per frame made the
// frames most of the publisher's and the subscriber's garbage, and gRPC's
// own pool zeroes a buffer (rounded up to its next tier, 1 MB) on every
// Get; these buffers are always overwritten in full, so they are not.
//
// Buffers are pooled by power-of-two capacity from 1<<MinShift to
// 1<<MaxShift bytes. Get and Put match grpc's mem.BufferPool, so a Pool can
// own the buffers gRPC frees after writing them, without this package
// importing gRPC.
package framepool

import (
	"math/bits"
	"sync"
)

// Capacities pooled; smaller requests get the smallest class, larger ones
// are allocated and left to the GC.
const (
	MinShift = 12
	MaxShift = 26
)

// Pool is a set of size-classed sync.Pools. The zero value is ready.
type Pool struct {
	classes [MaxShift - MinShift + 1]sync.Pool
}

func class(n int) int {
	if n <= 1<<MinShift {
		return 0
	}
	return bits.Len(uint(n-1)) - MinShift
}

// Get returns a buffer of length n. Its bytes are NOT zeroed: the caller
// must overwrite all of them before anyone reads them.
func (p *Pool) Get(n int) *[]byte {
	c := class(n)
	if c >= len(p.classes) {
		b := make([]byte, n)
		return &b
	}
	if bp, ok := p.classes[c].Get().(*[]byte); ok {
		*bp = (*bp)[:n]
		return bp
	}
	b := make([]byte, n, 1<<(c+MinShift))
	return &b
}

// Put returns a buffer from Get. Nobody may use it, or any slice of it,
// afterwards. Buffers of a capacity Get does not hand out are dropped.
func (p *Pool) Put(bp *[]byte) {
	if bp == nil {
		return
	}
	c := class(cap(*bp))
	if c >= len(p.classes) || cap(*bp) != 1<<(c+MinShift) {
		return
	}
	p.classes[c].Put(bp)
}
