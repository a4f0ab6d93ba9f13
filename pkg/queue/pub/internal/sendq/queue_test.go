package sendq

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

const hour = int64(time.Hour)

// fixture is one queue with one window, driven step by step; now is the
// clock the steps pass (deadlines are an hour past it unless a test says).
type fixture struct {
	t    *testing.T
	q    *Queue
	c    *Counters
	w    *Window
	now  int64
	keys map[*Owner]*Key
}

func newFixture(t *testing.T, edit func(*Config)) *fixture {
	c := new(Counters)
	cfg := Config{
		Node: "n1", MaxBytes: 1 << 20, MaxBatchMessages: 8, MaxBatchBytes: 1 << 16, MaxInFlight: 4, Counters: c,
	}
	if edit != nil {
		edit(&cfg)
	}
	q := New(cfg)
	return &fixture{t: t, q: q, c: c, w: q.NewWindow(), now: time.Now().UnixNano(), keys: map[*Owner]*Key{}}
}

// push queues a fresh message of o (counted as a publisher counts it)
// expiring ttl after now, and returns its future.
func (f *fixture) push(o *Owner, payload string, ttl int64) queue.Future {
	f.t.Helper()
	if o != nil && !o.Admit() {
		f.t.Fatal("owner closed")
	}
	k := f.keys[o]
	if k == nil {
		k = &Key{Owner: o, Topic: "t", Group: "g"}
		f.keys[o] = k
	}
	h := Head{Key: k, Deadline: f.now + ttl, Plen: uint32(len(payload))}
	fu, room, queued := f.q.Push(&h, []byte(payload), nil)
	if !queued || room != nil {
		f.t.Fatalf("push %s: queued %v, room %v", payload, queued, room)
	}
	return fu
}

// take takes the next batch, which must be there.
func (f *fixture) take() *Batch {
	f.t.Helper()
	b, r := f.q.Take(f.w)
	if r != Took {
		f.t.Fatalf("Take: %v, want a batch", r)
	}
	return b
}

// land takes b out of flight as if its ack came now.
func (f *fixture) land(b *Batch) *Batch {
	f.t.Helper()
	if got := f.q.Landed(f.w, b.ID(), f.now); got != b {
		f.t.Fatalf("Landed(%d) = %p, want %p", b.ID(), got, b)
	}
	return b
}

var errPending = errors.New("no answer yet")

// answer is what fu says now, or errPending.
func answer(fu queue.Future) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fu.Get(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return errPending
}

func payloads(b *Batch) []string {
	var out []string
	for _, p := range b.Payloads() {
		out = append(out, string(p))
	}
	return out
}

func judgeAll(v Verdict, err error) func(int, *Msg) (Verdict, error) {
	return func(int, *Msg) (Verdict, error) { return v, err }
}

// A clean batch acked on time settles every future at once, counts its
// owner down, and gives its messages back for new ones. A future whose
// message memory now carries a new message still answers for its own,
// whatever becomes of the new one.
func TestCleanAckSettlesAtOnceAndRecycles(t *testing.T) {
	f := newFixture(t, nil)
	o := NewOwner(1)
	old := []queue.Future{f.push(o, "a", hour), f.push(o, "b", hour), f.push(o, "c", hour)}
	b := f.take()
	if b.dirty {
		t.Fatal("a batch of fresh messages of one owner is dirty")
	}
	mem := slices.Clone(b.msgs)
	for i, fu := range old {
		if err := answer(fu); !errors.Is(err, errPending) {
			t.Fatalf("future %d before the ack says %v", i, err)
		}
	}
	f.q.Acked(f.land(b), nil, f.now)
	for i, fu := range old {
		if err := answer(fu); err != nil {
			t.Fatalf("future %d after a clean ack says %v", i, err)
		}
	}
	if got := f.c.Recycled.Load(); got != 3 {
		t.Fatalf("recycled %d messages, want 3", got)
	}
	if got := o.state.Load(); got != 0 {
		t.Fatalf("owner counts %d unresolved, want 0", got)
	}

	refused := errors.New("refused")
	next := []queue.Future{f.push(o, "d", hour), f.push(o, "e", hour), f.push(o, "f", hour)}
	b = f.take()
	for _, m := range b.msgs {
		if !slices.Contains(mem, m) {
			t.Fatalf("new message %p is not one of the recycled %p", m, mem)
		}
	}
	retry := f.q.Failed(f.land(b), nil, f.now, judgeAll(Refused, refused))
	if len(retry) != 0 {
		t.Fatalf("refused messages returned for retry: %d", len(retry))
	}
	for i := range next {
		if err := answer(next[i]); !errors.Is(err, refused) {
			t.Fatalf("new future %d says %v, want refused", i, err)
		}
		if err := answer(old[i]); err != nil {
			t.Fatalf("old future %d, its memory reused and refused, says %v", i, err)
		}
	}
	if got := f.c.Recycled.Load(); got != 3 {
		t.Fatalf("recycled %d messages after a dirty batch, want still 3", got)
	}
	if got := o.state.Load(); got != 0 {
		t.Fatalf("owner counts %d unresolved, want 0", got)
	}
}

// Each way a batch becomes dirty: its ack settles the messages one by
// one, each future says what became of its own message, the owners'
// counts come out exact, and no message is reused.
func TestDirtyBatchesAreNeverRecycled(t *testing.T) {
	refused := errors.New("refused")
	type want struct {
		payload string
		err     error // nil, refused or queue.ErrDeadline
	}
	for _, tc := range []struct {
		name string
		// play pushes, takes and settles, and returns what each future says.
		play func(f *fixture) map[string]queue.Future
		want []want
	}{{
		name: "a message refused in the ack",
		play: func(f *fixture) map[string]queue.Future {
			o := NewOwner(0)
			fs := map[string]queue.Future{"a": f.push(o, "a", hour), "bad": f.push(o, "bad", hour)}
			b := f.take()
			f.q.Failed(f.land(b), nil, f.now, func(_ int, m *Msg) (Verdict, error) {
				if m.Plen == 3 {
					return Refused, refused
				}
				return Succeeded, nil
			})
			return fs
		},
		want: []want{{"a", nil}, {"bad", refused}},
	}, {
		name: "a message expired in flight",
		play: func(f *fixture) map[string]queue.Future {
			o := NewOwner(0)
			fs := map[string]queue.Future{"soon": f.push(o, "soon", 1), "a": f.push(o, "a", hour)}
			b := f.take()
			f.now++
			f.q.Expire(f.now)
			f.q.Acked(f.land(b), nil, f.now)
			return fs
		},
		want: []want{{"soon", queue.ErrDeadline}, {"a", nil}},
	}, {
		name: "the ack came after a deadline",
		play: func(f *fixture) map[string]queue.Future {
			o := NewOwner(0)
			fs := map[string]queue.Future{"soon": f.push(o, "soon", 1), "a": f.push(o, "a", hour)}
			b := f.take()
			f.now++
			f.q.Acked(f.land(b), nil, f.now)
			return fs
		},
		want: []want{{"soon", queue.ErrDeadline}, {"a", nil}},
	}, {
		name: "a message re-placed from another node joined",
		play: func(f *fixture) map[string]queue.Future {
			o := NewOwner(0) // lane 0, where re-placed messages go
			fs := map[string]queue.Future{"a": f.push(o, "a", hour)}
			moved := &Msg{Head: Head{Key: f.keys[o], Deadline: f.now + hour, Plen: 5, X: &Extra{Payload: []byte("moved")}}}
			o.Admit()
			if left := f.q.PushForced([]*Msg{moved}); len(left) != 0 {
				t.Fatal("an open queue refused re-placed messages")
			}
			fs["moved"] = moved.Future()
			b := f.take()
			if got := payloads(b); !slices.Equal(got, []string{"a", "moved"}) {
				t.Fatalf("batch %v, want a and moved", got)
			}
			f.q.Acked(f.land(b), nil, f.now)
			return fs
		},
		want: []want{{"a", nil}, {"moved", nil}},
	}, {
		name: "more owners than a batch counts",
		play: func(f *fixture) map[string]queue.Future {
			fs := map[string]queue.Future{}
			for i, p := range []string{"o0", "o1", "o2", "o3", "o4"} {
				fs[p] = f.push(NewOwner(uint32(4*i)), p, hour) // all on lane 0
			}
			f.q.Acked(f.land(f.take()), nil, f.now)
			return fs
		},
		want: []want{{"o0", nil}, {"o1", nil}, {"o2", nil}, {"o3", nil}, {"o4", nil}},
	}, {
		name: "its stream broke and it was resent",
		play: func(f *fixture) map[string]queue.Future {
			o := NewOwner(0)
			fs := map[string]queue.Future{"a": f.push(o, "a", hour), "b": f.push(o, "b", hour)}
			f.take()
			f.q.Requeue(f.w)
			if got := f.q.InFlight(); got != 0 {
				t.Fatalf("%d batches in flight after Requeue", got)
			}
			b := f.take()
			if got := payloads(b); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("resent batch %v, want a and b in order", got)
			}
			f.q.Acked(f.land(b), nil, f.now)
			return fs
		},
		want: []want{{"a", nil}, {"b", nil}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			fs := tc.play(f)
			for _, w := range tc.want {
				err := answer(fs[w.payload])
				if (w.err == nil) != (err == nil) || w.err != nil && !errors.Is(err, w.err) {
					t.Errorf("future of %s says %v, want %v", w.payload, err, w.err)
				}
			}
			if got := f.c.Recycled.Load(); got != 0 {
				t.Errorf("%d messages of a dirty batch recycled", got)
			}
			for o := range f.keys {
				if got := o.state.Load(); got != 0 {
					t.Errorf("an owner counts %d unresolved, want 0", got)
				}
			}
		})
	}
}

// While a small batch is the latest in flight, the next small one is
// held; it goes once it reaches a quarter of the caps (Push wakes the
// send loop then) or nothing small is in flight, and behind a big batch
// nothing waits.
func TestTakeHoldsSmallBatchesBehindASmallOne(t *testing.T) {
	f := newFixture(t, nil) // 8 messages a batch: a quarter is 2
	o := NewOwner(1)
	f.push(o, "a", hour)
	first := f.take()
	f.push(o, "b", hour)
	<-f.q.Work() // the lane went from empty to not
	if _, r := f.q.Take(f.w); r != Held {
		t.Fatalf("Take behind a small batch: %v, want Held", r)
	}
	if got := f.c.Held.Load(); got != 1 {
		t.Fatalf("Held counted %d, want 1", got)
	}
	f.push(o, "c", hour)
	select {
	case <-f.q.Work():
	default:
		t.Fatal("the held batch reached a quarter of the caps and Work was not signalled")
	}
	if b := f.take(); b.Len() != 2 {
		t.Fatalf("took %d messages, want the 2 held", b.Len())
	}
	f.push(o, "d", hour)
	if b := f.take(); b.Len() != 1 {
		t.Fatalf("behind a big batch: took %d messages, want 1 at once", b.Len())
	}
	f.q.Acked(f.land(first), nil, f.now)
}

// A batch taken from one lane takes the other lanes' oldest batches of
// its topic along while the caps allow: one frame, each lane's messages
// settled by their own batch's outcome.
func TestTakeFoldsOtherLanes(t *testing.T) {
	f := newFixture(t, nil)
	o1, o2 := NewOwner(1), NewOwner(2)
	fs := []queue.Future{f.push(o1, "a1", hour), f.push(o2, "b1", hour), f.push(o1, "a2", hour), f.push(o2, "b2", hour)}
	b := f.take()
	if got := payloads(b); !slices.Equal(got, []string{"a1", "a2", "b1", "b2"}) {
		t.Fatalf("frame %v, want both lanes' messages", got)
	}
	if _, r := f.q.Take(f.w); r != Empty {
		t.Fatalf("Take after the fold: %v, want Empty", r)
	}
	f.q.Acked(f.land(b), nil, f.now)
	for i, fu := range fs {
		if err := answer(fu); err != nil {
			t.Fatalf("future %d says %v", i, err)
		}
	}
	if o1.state.Load() != 0 || o2.state.Load() != 0 {
		t.Fatalf("owners count %d and %d unresolved, want 0", o1.state.Load(), o2.state.Load())
	}
	if got := f.c.Recycled.Load(); got != 4 {
		t.Fatalf("recycled %d, want 4", got)
	}
}

// The budget admits a message while it fits, or into an empty budget;
// otherwise Push returns the channel an ack closes.
func TestBudget(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxBytes = 100 })
	o := NewOwner(1)
	f.push(o, string(make([]byte, 150)), hour) // over the budget, but it is empty
	h := Head{Key: f.keys[o], Deadline: f.now + hour, Plen: 10}
	if _, room, queued := f.q.Push(&h, make([]byte, 10), nil); queued || room == nil {
		t.Fatalf("push into a full budget: queued %v, room %v; want a channel to wait on", queued, room)
	}
	room := f.q.waitRoom(10)
	f.q.Acked(f.land(f.take()), nil, f.now)
	select {
	case <-room:
	default:
		t.Fatal("the ack released the bytes and the waiting publisher was not woken")
	}
	f.push(o, string(make([]byte, 10)), hour)
	if got := f.q.Used(); got < 10 || got > 100 {
		t.Fatalf("budget in use %d, want the new message's 10 and at most the budget", got)
	}
}

// Drain takes every queued message, with its payload, for re-placement
// elsewhere, leaving batches in flight alone.
func TestDrain(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxBatchMessages = 1 })
	o := NewOwner(1)
	inFlight := f.push(o, "a", hour)
	f.take()
	f.push(o, "b", hour)
	f.push(o, "c", hour)
	ms := f.q.Drain()
	var got []string
	for _, m := range ms {
		got = append(got, string(m.Payload()))
		if m.Avoid() != "n1" {
			t.Errorf("drained %s avoids %q, want n1", m.Payload(), m.Avoid())
		}
	}
	if !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("drained %v, want b and c", got)
	}
	if q, out := f.q.Queued(), f.q.Outstanding(); q != 0 || out != 1 {
		t.Fatalf("after Drain: %d queued, %d outstanding; want 0 and the 1 in flight", q, out)
	}
	if err := answer(inFlight); !errors.Is(err, errPending) {
		t.Fatalf("in-flight future says %v", err)
	}
	f.q.Close()
	if left := f.q.PushForced(ms); len(left) != 2 {
		t.Fatalf("a closed queue took %d re-placed messages", 2-len(left))
	}
}

// A too-large ack halves the caps and requeues its messages at the front,
// in batches under the new caps.
func TestTooLargeHalvesTheCaps(t *testing.T) {
	f := newFixture(t, nil)
	o := NewOwner(1)
	for _, p := range []string{"a", "b", "c", "d"} {
		f.push(o, p, hour)
	}
	b := f.take()
	if retry := f.q.Failed(f.land(b), nil, f.now, judgeAll(TooLarge, nil)); len(retry) != 0 {
		t.Fatalf("too-large messages returned for retry: %d", len(retry))
	}
	if got := f.q.Queued(); got != 4 {
		t.Fatalf("%d queued after a too-large ack, want the 4 back", got)
	}
	for _, want := range [][]string{{"a", "b"}, {"c", "d"}} {
		if got := payloads(f.take()); !slices.Equal(got, want) {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
}

// A message failed retryably leaves the queue with its payload and the
// failure, for the caller to place elsewhere.
func TestRetryReturnsTheMessages(t *testing.T) {
	f := newFixture(t, nil)
	o := NewOwner(1)
	fu := f.push(o, "a", hour)
	down := errors.New("unavailable")
	retry := f.q.Failed(f.land(f.take()), nil, f.now, judgeAll(Retry, down))
	if len(retry) != 1 || string(retry[0].Payload()) != "a" || retry[0].Avoid() != "n1" || !errors.Is(retry[0].X.LastFail, down) {
		t.Fatalf("retry list %v, want a with its payload, n1 to avoid and the failure", retry)
	}
	if err := answer(fu); !errors.Is(err, errPending) {
		t.Fatalf("future of a message to retry says %v", err)
	}
	if f.q.Outstanding() != 0 {
		t.Fatal("the queue still counts a message it returned")
	}
}

// The window bounds the batches in flight, and a batch built before the
// caps came down is split, or failed if one message is over the cap alone.
func TestTakeLimits(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxInFlight = 2 })
	o := NewOwner(1)
	for _, pair := range [][2]string{{"a", "b"}, {"c", "d"}} { // a quarter of the caps: nothing is held
		f.push(o, pair[0], hour)
		f.push(o, pair[1], hour)
		f.take()
	}
	f.push(o, "e", hour)
	if _, r := f.q.Take(f.w); r != Full {
		t.Fatalf("Take on a full window: %v, want Full", r)
	}

	g := newFixture(t, nil)
	big := g.push(o, string(make([]byte, 200)), hour)
	g.q.Open(g.w, 100, g.now)
	if _, r := g.q.Take(g.w); r != Again {
		t.Fatalf("Take of a message over the lowered cap: %v, want Again", r)
	}
	if err := answer(big); !errors.Is(err, queue.ErrInvalidMessage) {
		t.Fatalf("future of a message over the cap says %v, want ErrInvalidMessage", err)
	}
}

// A message taken off for re-placement stays counted by the budget it
// left until another queue takes it (then by that one's) or it is let go;
// PushForced takes re-placed messages up to twice the budget and hands
// back the rest, still counted where they were.
func TestReplacedMessagesMoveTheirBytes(t *testing.T) {
	from := newFixture(t, func(c *Config) { c.MaxBytes, c.Node = 100, "from" })
	to := newFixture(t, func(c *Config) { c.MaxBytes, c.Node = 100, "to" })
	o := NewOwner(1)
	ten := string(make([]byte, 10))

	// A retry and a drain leave their bytes on from.
	from.push(o, ten, hour)
	retry := from.q.Failed(from.land(from.take()), nil, from.now, judgeAll(Retry, errors.New("unavailable")))
	for range 3 {
		from.push(o, ten, hour)
	}
	from.q.reclaim() // the lane's unused credit is no message's
	drained := from.q.Drain()
	ms := slices.Concat(retry, drained)
	if len(ms) != 4 || from.q.Used() != 40 {
		t.Fatalf("%d messages taken off, %d bytes still counted; want 4 and their 40", len(ms), from.q.Used())
	}

	// Back to the queue that holds them: counted once.
	if left := from.q.PushForced(ms[:1]); len(left) != 0 || from.q.Used() != 40 {
		t.Fatalf("re-placed onto its own queue: %d left, %d bytes; want 0 and 40", len(left), from.q.Used())
	}
	// Onto another: the bytes move.
	if left := to.q.PushForced(ms[1:]); len(left) != 0 || from.q.Used() != 10 || to.q.Used() != 30 {
		t.Fatalf("re-placed elsewhere: %d left, %d and %d bytes; want 0, 10 and 30", len(left), from.q.Used(), to.q.Used())
	}

	// Up to twice the budget, whatever comes: the rest is handed back,
	// still counted by the queue it came off.
	other := newFixture(t, func(c *Config) { c.MaxBytes, c.Node = 1000, "other" })
	for range 30 {
		other.push(o, ten, hour)
	}
	other.q.reclaim()
	burst := other.q.Drain()
	left := to.q.PushForced(burst)
	if to.q.Used() > 200 || to.q.Used() < 190 {
		t.Fatalf("after a burst of 300 bytes %d bytes in use, want up to twice the budget of 100", to.q.Used())
	}
	if len(left) != 30-17 || other.q.Used() != int64(10*len(left)) {
		t.Fatalf("%d handed back, %d bytes still on their queue; want 13 and 130", len(left), other.q.Used())
	}
	// Let go (settled while waiting, say): the bytes are free.
	for _, m := range left {
		m.Unhold()
		m.Unhold() // twice is once
	}
	if other.q.Used() != 0 {
		t.Fatalf("%d bytes still counted for messages let go", other.q.Used())
	}
	// An empty queue takes one message whatever its size.
	empty := newFixture(t, func(c *Config) { c.MaxBytes, c.Node = 10, "empty" })
	big := newFixture(t, nil)
	big.push(o, string(make([]byte, 50)), hour)
	big.q.reclaim()
	if left := empty.q.PushForced(big.q.Drain()); len(left) != 0 || empty.q.Used() != 50 {
		t.Fatalf("into an empty budget: %d left, %d bytes", len(left), empty.q.Used())
	}
}
