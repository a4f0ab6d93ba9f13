package sub

import (
	"sync"

	"github.com/banyand-io/banyand/pkg/queue/internal/framepool"
)

// frameBuf holds one received frame and the message list of its batch.
// Every message of the batch is a slice of b, so the frameBuf goes back to
// its pools only after the batch's ack is sent: the listener has returned
// by then (queue.Batch's messages are valid only during Handle) and the
// ack, whose replies may alias the request, is encoded. Allocating each
// frame anew made the received bytes most of a data node's garbage.
type frameBuf struct {
	bp   *[]byte
	b    []byte // *bp
	msgs [][]byte
}

var (
	frameBytes framepool.Pool
	frameBufs  = sync.Pool{New: func() any { return new(frameBuf) }}
)

// getFrameBuf returns a frameBuf whose b has length n. The bytes are not
// zeroed: the caller overwrites all of them.
func getFrameBuf(n int) *frameBuf {
	fb := frameBufs.Get().(*frameBuf)
	fb.bp = frameBytes.Get(n)
	fb.b = *fb.bp
	return fb
}

// release returns fb to its pools. Nobody may use fb or any slice of it
// afterwards. A nil fb is a no-op.
func (fb *frameBuf) release() {
	if fb == nil {
		return
	}
	frameBytes.Put(fb.bp)
	fb.bp, fb.b = nil, nil
	// The stale slices in msgs point into the released bytes; they are
	// overwritten before they are read again, and not clearing them saves
	// a write barrier each.
	fb.msgs = fb.msgs[:0]
	frameBufs.Put(fb)
}
