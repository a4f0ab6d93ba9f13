package pub

import "sync/atomic"

// outcome is the ack of a batch's own messages: one store settles them
// all, and their publishers' counts drop by a batch at a time. It is safe
// because once the ack handler has taken a clean batch out of flight
// nothing else can settle its messages: no message of it has been settled
// or moved (that makes the batch dirty), and a message that later leaves
// a batch only does so from a dirty or discarded one, whose outcome is
// never set. So an acked outcome is the final word on its messages, and
// once it is, the messages themselves may be reused (see lane.recycle):
// their futures hold the outcome as well as the message (see msg.result).
type outcome struct {
	acked atomic.Bool
	wait  atomic.Pointer[chan struct{}] // made only when a Get has to wait
}

// ack settles the own messages of b, which is clean and out of flight.
func (b *batch) ack() {
	o := b.out
	o.acked.Store(true)
	// A Get that saw acked unset has published its channel before its
	// check, so this Load finds it.
	if ch := o.wait.Load(); ch != nil {
		close(*ch)
	}
	for i := range b.npub {
		b.pubs[i].finish(b.count[i])
	}
	for _, o := range b.merged {
		o.ack()
		putBatch(o)
	}
}

// own makes fresh message m one of b's own, if b is still clean, and
// returns b's outcome; else it marks b dirty and returns nil. The outcome
// goes into m's future only, never into m: m may be recycled once the
// outcome is acked, while its future lives on.
func (b *batch) own(m *msg) *outcome {
	if b.dirty {
		return nil
	}
	for i := range b.npub {
		if b.pubs[i] == m.pub {
			b.count[i]++
			return b.out
		}
	}
	if b.npub == len(b.pubs) {
		b.dirty = true
		return nil
	}
	b.pubs[b.npub], b.count[b.npub] = m.pub, 1
	b.npub++
	return b.out
}

// detach stores each unresolved message's payload in the message as the
// messages leave b (requeued, drained or re-placed): out of a batch, a
// message keeps its own payload. The messages' holder calls it.
func (b *batch) detach() {
	for i, m := range b.msgs {
		if !m.isDone() {
			m.keepPayload(b.payloads[i])
		}
	}
}
