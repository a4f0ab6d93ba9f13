package sendq

// Landed takes the batch with id out of flight on w, as its ack came at
// now, and returns it for Acked or Failed; nil if no such batch is in
// flight there.
func (q *Queue) Landed(w *Window, id uint64, now int64) *Batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, b := range w.pending {
		if b.id != id {
			continue
		}
		copy(w.pending[i:], w.pending[i+1:])
		w.pending[len(w.pending)-1] = nil
		w.pending = w.pending[:len(w.pending)-1]
		w.lastProgress = now
		q.inflight.Add(-1)
		return b
	}
	return nil
}

// Acked settles b, landed at now, whose ack says every message succeeded;
// replies[i], if any, is message i's reply. A message past its deadline
// keeps its deadline error: its caller may already have heard it. b is
// the queue's again.
func (q *Queue) Acked(b *Batch, replies [][]byte, now int64) {
	if !b.dirty && now < b.minDeadline {
		// Every message is the batch's own and on time: settle them at
		// once, and reuse them (see the package doc).
		b.ack()
		q.release(b.bytes)
		if b.lane != nil {
			b.lane.recycle(b, &q.cfg.Counters.Recycled)
		}
		putAckedBatch(b)
		return
	}
	late := now >= b.minDeadline // else no message of b can have expired
	var fin finisher
	for i, m := range b.msgs {
		if late && m.Expired(now) {
			m.Resolve(DeadlineErr(m, q.cfg.Node), nil)
			continue
		}
		if m.Settle(nil, replyAt(replies, i)) {
			fin.add(m)
		}
	}
	fin.flush()
	q.release(b.bytes)
	putBatch(b)
}

func replyAt(replies [][]byte, i int) []byte {
	if i < len(replies) {
		return replies[i]
	}
	return nil
}

// Verdict is what an ack that failed some of a batch's messages says of
// one message.
type Verdict int

// What became of a message in a failed ack.
const (
	Succeeded Verdict = iota // written, like a message of an Acked batch
	Refused                  // failed for good, with the error given
	TooLarge                 // the batch was over the node's limit: requeued here, the caps halved
	Retry                    // failed here, may succeed elsewhere: returned for re-placement
)

// Failed settles b, landed at now, whose ack failed some or all of its
// messages: judge says what became of message i. It returns the messages
// to re-place on another node (Retry), each recording the queue's node as
// the one to avoid and the error judge gave as its last failure, and
// still counted by this queue's budget until they are queued elsewhere or
// let go (see PushForced). b is the queue's again.
func (q *Queue) Failed(b *Batch, replies [][]byte, now int64, judge func(i int, m *Msg) (Verdict, error)) (retry []*Msg) {
	var again []*Msg
	shrunk := false
	for i, m := range b.msgs {
		v, err := judge(i, m)
		switch {
		case v == Succeeded && m.Expired(now):
			m.Resolve(DeadlineErr(m, q.cfg.Node), nil) // a late ack, as in Acked
			continue
		case v == Succeeded:
			m.Resolve(nil, replyAt(replies, i))
			continue
		case m.IsDone():
			continue
		}
		switch v {
		case Refused:
			m.Resolve(err, nil)
		case TooLarge:
			shrunk = true
			m.keepPayload(b.payloads[i])
			again = append(again, m)
		default:
			m.FailedOn(q.cfg.Node, err)
			m.keepPayload(b.payloads[i])
			m.hold(q)
			retry = append(retry, m)
		}
	}
	var kept int64
	for _, m := range again {
		kept += m.Size()
	}
	for _, m := range retry {
		kept += m.Size()
	}
	if !shrunk {
		q.release(b.bytes - kept)
	} else {
		q.mu.Lock()
		q.releaseLocked(b.bytes - kept)
		// The node's limit (bytes or count) is lower than ours: halve both.
		q.maxBytes.Store(max(q.maxBytes.Load()/2, 1024))
		q.maxMsgs.Store(int64(max(len(b.msgs)/2, 1)))
		q.requeueFront(again)
		q.mu.Unlock()
	}
	putBatch(b)
	return retry
}
