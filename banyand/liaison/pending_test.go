package liaison

import (
	"context"
	"testing"
)

func popID(t *testing.T, q *pendingQueue) uint64 {
	t.Helper()
	p, ok := q.pop()
	if !ok {
		t.Fatal("pop: queue closed and empty")
	}
	return p.messageID
}

// Writes come out in the order they went in while the ring wraps around
// and grows, and the ring never grows past the bound.
func TestPendingQueueOrderAcrossGrowth(t *testing.T) {
	const max = 1000
	q := newPendingQueue(max)
	var in, out uint64
	for q.n <= max-3 { // three in, one out: the ring wraps and grows
		for range 3 {
			in++
			q.push(context.Background(), pendingWrite{messageID: in})
		}
		out++
		if id := popID(t, q); id != out {
			t.Fatalf("popped %d, want %d", id, out)
		}
	}
	if len(q.ring) > ceilPow2(max) {
		t.Fatalf("ring of %d for a bound of %d", len(q.ring), max)
	}
	q.close()
	for out < in {
		out++
		if id := popID(t, q); id != out {
			t.Fatalf("popped %d, want %d", id, out)
		}
	}
	if _, ok := q.pop(); ok {
		t.Fatal("pop after close and drain reported a write")
	}
	q.release()
}

// A full queue holds push until a pop makes room, or its context ends.
func TestPendingQueueBackpressure(t *testing.T) {
	const max = 4
	q := newPendingQueue(max)
	for id := uint64(1); id <= max; id++ {
		if !q.push(context.Background(), pendingWrite{messageID: id}) {
			t.Fatal("push into a queue with room failed")
		}
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if q.push(done, pendingWrite{messageID: 99}) {
		t.Fatal("push into a full queue with a done context reported queued")
	}
	pushed := make(chan bool)
	go func() { pushed <- q.push(context.Background(), pendingWrite{messageID: max + 1}) }()
	if id := popID(t, q); id != 1 {
		t.Fatalf("popped %d, want 1", id)
	}
	if !<-pushed {
		t.Fatal("a push waiting for room failed")
	}
	for want := uint64(2); want <= max+1; want++ {
		if id := popID(t, q); id != want {
			t.Fatalf("popped %d, want %d", id, want)
		}
	}
	q.close()
	q.release()
}

// pop waits for a push or close; a ring goes back to the pool holding no write.
func TestPendingQueuePopWaitsAndReleaseClears(t *testing.T) {
	q := newPendingQueue(maxPendingPerStream)
	popped := make(chan uint64)
	go func() {
		for {
			p, ok := q.pop()
			if !ok {
				close(popped)
				return
			}
			popped <- p.messageID
		}
	}()
	buf := []byte("payload")
	for id := uint64(1); id <= 200; id++ {
		q.push(context.Background(), pendingWrite{messageID: id, metadataRaw: buf, payload: &buf, err: &writeError{}})
		if got := <-popped; got != id {
			t.Fatalf("popped %d, want %d", got, id)
		}
	}
	q.close()
	if _, open := <-popped; open {
		t.Fatal("pop reported a write after close")
	}
	for i, p := range q.ring {
		if p.messageID != 0 || p.metadataRaw != nil || p.payload != nil || p.err != nil || p.metadata != nil || !p.future.IsZero() {
			t.Fatalf("ring slot %d still holds a write: %+v", i, p)
		}
	}
	q.release()
}
