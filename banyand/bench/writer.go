package bench

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

var statusSucceed = modelv1.Status_STATUS_SUCCEED.String()

// pacer spreads sends evenly at rate messages/s over all streams: the n-th
// send is due at start + n/rate. It keeps the average rate; a writer that
// fell behind (waiting for acks) catches up without waiting.
type pacer struct {
	start    time.Time
	interval float64 // ns per message
	// early is how long before its due time a message may leave: a sender
	// that wakes sends everything due within early, so a paced run costs
	// a wake-up per burst, not per message (see --rate-burst).
	early time.Duration
	n     atomic.Int64
}

func newPacer(rate float64, burst time.Duration, start time.Time) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{start: start, interval: float64(time.Second) / rate, early: burst}
}

// wait blocks until the next send is due or ctx is done. A message due
// within p.early goes at once; one due later is waited for until its due
// time, after which those due within p.early of it go at once: bursts of
// p.early. Message n is due at start + n·interval, so however the sends
// bunch up, the run keeps the rate.
func (p *pacer) wait(ctx context.Context) error {
	if p == nil {
		return ctx.Err()
	}
	d := p.delay(p.n.Add(1)-1, time.Now())
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// delay is how long message n waits at now: 0 if it is due within p.early,
// else until its due time.
func (p *pacer) delay(n int64, now time.Time) time.Duration {
	d := p.start.Add(time.Duration(float64(n) * p.interval)).Sub(now)
	if d <= p.early {
		return 0
	}
	return d
}

// writeRun is the state the write streams share: the seq counter, the
// pacer and the counters the progress line reads.
type writeRun struct {
	cfg   Config
	w     workload
	pace  *pacer
	start time.Time

	next     atomic.Int64 // next seq to send
	sent     atomic.Uint64
	acked    atomic.Uint64
	failed   atomic.Uint64 // answered with another status
	lastResp atomic.Int64  // ns since start of the latest response
	// slowest is the largest ack latency (ns) since the progress line last
	// took it: it shows when in a run the tail happens.
	slowest atomic.Int64
}

// noteLatency raises slowest to d if d is larger.
func (r *writeRun) noteLatency(d time.Duration) {
	for {
		cur := r.slowest.Load()
		if int64(d) <= cur || r.slowest.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

func (r *writeRun) since() time.Duration { return time.Since(r.start) }

// streamResult is what one write stream did. The send loop owns sent,
// bytes and firstSend; the receive loop owns the rest; they are read after
// both loops ended.
type streamResult struct {
	sent, bytes uint64
	firstSend   time.Duration
	hasSend     bool

	acked      uint64
	errors     map[string]uint64
	hist       histogram
	lastResp   time.Duration
	ackedSeqs  []int64
	streamErr  error
	unanswered uint64
}

type sentMsg struct {
	seq int64
	at  time.Duration
}

// pending is the messages of one stream awaiting their response, matched
// by message id. The send loop adds, the receive loop takes.
type pending struct {
	mu       sync.Mutex
	m        map[uint64]sentMsg
	sendDone bool
}

func (p *pending) put(id uint64, s sentMsg) {
	p.mu.Lock()
	p.m[id] = s
	p.mu.Unlock()
}

func (p *pending) drop(id uint64) {
	p.mu.Lock()
	delete(p.m, id)
	p.mu.Unlock()
}

// take removes id; finished reports that the sender is done and nothing
// is left to wait for.
func (p *pending) take(id uint64) (s sentMsg, ok, finished bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok = p.m[id]
	delete(p.m, id)
	return s, ok, p.sendDone && len(p.m) == 0
}

// finishSending marks the send loop done and reports whether nothing is
// outstanding.
func (p *pending) finishSending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sendDone = true
	return len(p.m) == 0
}

func (p *pending) left() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// writer runs one of the run's concurrent writers: one stream for the
// whole run or, with --flush-size, one stream after another, each of
// FlushSize messages, as SkyWalking OAP opens one a bulk flush.
func (r *writeRun) writer(runCtx, sendCtx context.Context, verify bool) []*streamResult {
	var out []*streamResult
	for {
		res, more := r.stream(runCtx, sendCtx, verify)
		out = append(out, res)
		if !more || res.streamErr != nil || runCtx.Err() != nil {
			return out
		}
	}
}

// stream runs one bidi Write stream until the send side is done (count
// reached, sendCtx done, or FlushSize messages sent: more is then true)
// and every sent message is answered, or runCtx ends it. Backpressure: the send loop blocks while MaxInFlight messages
// of this stream are unanswered; it is released by a response, by the
// receive loop ending, or by sendCtx.
func (r *writeRun) stream(runCtx, sendCtx context.Context, verify bool) (res *streamResult, more bool) {
	res = &streamResult{errors: map[string]uint64{}}
	ctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	wc, err := r.w.openWrite(ctx)
	if err != nil {
		res.streamErr = err
		return res, false
	}
	pend := &pending{m: make(map[uint64]sentMsg, r.cfg.MaxInFlight)}
	slots := make(chan struct{}, r.cfg.MaxInFlight)
	recvDone := make(chan struct{})
	var finished atomic.Bool // every message answered: a later error is ours
	go func() {
		defer close(recvDone)
		r.receive(wc, pend, slots, res, verify, &finished, cancel)
	}()

	// Message ids count up from a clock reading, as SkyWalking OAP's are
	// nanosecond clock readings: a measure point's version is its message
	// id, so a later run's re-write of a point wins over an earlier run's.
	id := uint64(time.Now().UnixNano())
send:
	for {
		if r.cfg.FlushSize > 0 && int64(res.sent) >= r.cfg.FlushSize {
			more = true
			break
		}
		select {
		case slots <- struct{}{}:
		case <-sendCtx.Done():
			break send
		case <-recvDone:
			break send
		}
		if r.pace.wait(sendCtx) != nil {
			break
		}
		seq := r.next.Add(1) - 1
		if r.cfg.Count > 0 && seq >= r.cfg.Count {
			break
		}
		id++
		at := r.since()
		pend.put(id, sentMsg{seq: seq, at: at})
		n, err := wc.send(id, seq)
		if err != nil {
			// The stream is broken; the receive loop reports why.
			pend.drop(id)
			break
		}
		if !res.hasSend {
			res.firstSend, res.hasSend = at, true
		}
		res.sent++
		res.bytes += uint64(n)
		r.sent.Add(1)
	}
	_ = wc.closeSend()
	if pend.finishSending() {
		finished.Store(true)
		cancel()
	}
	<-recvDone
	res.unanswered = uint64(pend.left())
	if res.unanswered > 0 {
		res.errors[StatusNoResponse] += res.unanswered
	}
	return res, more
}

// receive is the stream's only Recv caller.
func (r *writeRun) receive(wc writeClient, pend *pending, slots chan struct{}, res *streamResult, verify bool, finished *atomic.Bool, cancel context.CancelFunc) {
	for {
		id, st, err := wc.recv()
		if err != nil {
			switch {
			case finished.Load():
			case !errors.Is(err, io.EOF):
				res.streamErr = err
			case pend.left() > 0:
				res.streamErr = errors.New("the server ended the write stream with messages unanswered")
			}
			return
		}
		now := r.since()
		s, ok, done := pend.take(id)
		if !ok {
			res.errors["UNKNOWN_MESSAGE_ID"]++
			r.failed.Add(1)
			continue
		}
		<-slots
		res.hist.record(now - s.at)
		r.noteLatency(now - s.at)
		res.lastResp = now
		r.lastResp.Store(int64(now))
		if st == statusSucceed {
			res.acked++
			r.acked.Add(1)
			if verify {
				res.ackedSeqs = append(res.ackedSeqs, s.seq)
			}
		} else {
			if st == "" {
				st = "EMPTY_STATUS"
			}
			res.errors[st]++
			r.failed.Add(1)
		}
		if done {
			finished.Store(true)
			cancel()
			return
		}
	}
}
