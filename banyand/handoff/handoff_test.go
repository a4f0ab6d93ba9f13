package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// fakeQueue is a queue.Client whose publishes end as outcome says, and
// which records what it published.
type fakeQueue struct {
	mu        sync.Mutex
	outcome   func(payload string) error
	published []string
}

func (q *fakeQueue) set(f func(string) error) {
	q.mu.Lock()
	q.outcome = f
	q.mu.Unlock()
}

func (q *fakeQueue) NewBatchPublisher(time.Duration) queue.BatchPublisher { return q }
func (q *fakeQueue) Broadcast(context.Context, queue.Topic, string, []byte) ([]queue.Reply, error) {
	return nil, errors.New("not used")
}
func (q *fakeQueue) Close() error { return nil }

func (q *fakeQueue) Publish(_ context.Context, topic queue.Topic, m queue.Message) (queue.Future, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.published = append(q.published, fmt.Sprintf("%s %s/%d %s", topic, m.Group, m.Shard, m.Payload))
	if m.Group == "deleted" {
		return queue.Future{}, fmt.Errorf("cannot place: %w", route.ErrUnknownGroup)
	}
	err := q.outcome(string(m.Payload))
	return queue.NewFuture(doneWaiter{err}, queue.Token{}), nil
}

type doneWaiter struct{ err error }

func (w doneWaiter) Wait(context.Context, queue.Token) error { return w.err }

// fakeMarker records the marked pairs and may fail.
type fakeMarker struct {
	mu     sync.Mutex
	marked map[pair]bool
	fail   error
}

func (m *fakeMarker) Mark(_ context.Context, group string, shard uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.marked == nil {
		m.marked = map[pair]bool{}
	}
	m.marked[pair{group, shard}] = true
	return nil
}

func (m *fakeMarker) Clear(_ context.Context, group string, shard uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.marked, pair{group, shard})
	return nil
}

func (m *fakeMarker) pairs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p := range m.marked {
		out = append(out, fmt.Sprintf("%s/%d", p.group, p.shard))
	}
	slices.Sort(out)
	return out
}

func hint(t *testing.T, topic queue.Topic, group string, shard uint32, payload string) []byte {
	t.Helper()
	b, err := proto.Marshal(&clusterv1.Hint{Topic: string(topic), Group: group, ShardId: shard, Payload: []byte(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func start(t *testing.T, dir string, q queue.Client, m Marker) *Store {
	t.Helper()
	s := New(Config{Dir: dir, Topics: []queue.Topic{queue.TopicStreamWrite, queue.TopicMeasureWrite}, Interval: 5 * time.Millisecond},
		Deps{Queue: q, Marker: m})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		cancel()
		<-served
	})
	return s
}

// A hint is kept (its pair marked first) and handed off once the queue
// takes its write with every copy; until then it stays, across a restart
// too. Then the pair's mark is cleared.
func TestHintsAreKeptUntilHandedOff(t *testing.T) {
	dir := t.TempDir()
	q := &fakeQueue{outcome: func(string) error { return fmt.Errorf("two of three nodes away: %w", queue.ErrNoNodes) }}
	m := &fakeMarker{}
	s := start(t, dir, q, m)
	res := s.Handle(context.Background(), queue.Batch{Topic: queue.TopicHint, Messages: [][]byte{
		hint(t, queue.TopicStreamWrite, "sw", 1, "w1"),
		[]byte("\xff garbage"),
		hint(t, queue.TopicMeasureWrite, "mw", 3, "w2"),
		hint(t, queue.TopicHint, "sw", 1, "a hint of a hint"),
		hint(t, queue.TopicStreamWrite, "", 1, "no group"),
		hint(t, queue.TopicStreamWrite, "sw", 1, ""),
		hint(t, queue.TopicStreamWrite, "sw", 1, "w3"),
	}})
	for i, err := range res.Errs {
		if bad := i == 1 || i == 3 || i == 4 || i == 5; bad != errors.Is(err, queue.ErrInvalidMessage) || !bad && err != nil {
			t.Errorf("hint %d: %v", i, err)
		}
	}
	if st := s.Stats(); st.Pending != 3 || st.Received != 3 {
		t.Fatalf("stats %+v, want 3 pending and received", st)
	}
	if got := m.pairs(); !slices.Equal(got, []string{"mw/3", "sw/1"}) {
		t.Fatalf("marked %v, want mw/3 and sw/1", got)
	}
	poll.Until(t, "a hand-off attempt", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.published) >= 3 })
	if st := s.Stats(); st.Pending != 3 || st.Delivered != 0 {
		t.Fatalf("stats after failed hand-offs %+v, want all 3 pending", st)
	}

	// A restart keeps them.
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	m2 := &fakeMarker{}
	s = start(t, dir, q, m2)
	if st := s.Stats(); st.Pending != 3 {
		t.Fatalf("after a restart %+v, want 3 pending", st)
	}
	if got := m2.pairs(); !slices.Equal(got, []string{"mw/3", "sw/1"}) {
		t.Fatalf("marked again after a restart %v, want mw/3 and sw/1", got)
	}

	// The nodes are back: each write is published again as it was.
	q.mu.Lock()
	q.published = nil
	q.mu.Unlock()
	q.set(func(string) error { return nil })
	poll.Until(t, "every hint handed off", func() bool { return s.Stats().Pending == 0 })
	q.mu.Lock()
	got := slices.Clone(q.published)
	q.mu.Unlock()
	slices.Sort(got)
	if want := []string{"measure-write mw/3 w2", "stream-write sw/1 w1", "stream-write sw/1 w3"}; !slices.Equal(got, want) {
		t.Fatalf("handed off %q, want %q", got, want)
	}
	if st := s.Stats(); st.Delivered != 3 {
		t.Fatalf("stats %+v, want 3 delivered", st)
	}
	poll.Until(t, "the marks cleared", func() bool { return len(m2.pairs()) == 0 })
}

// A pair that cannot be marked is not kept: the hint fails retryably and
// nothing is stored. A write a node refuses as invalid, or of a group
// deleted since, can never be handed off: its hint is dropped, counted.
func TestHintsUnmarkedOrUndeliverable(t *testing.T) {
	q := &fakeQueue{outcome: func(p string) error {
		if p == "bad" {
			return fmt.Errorf("refused: %w", queue.ErrInvalidMessage)
		}
		return fmt.Errorf("away: %w", queue.ErrNoNodes)
	}}
	m := &fakeMarker{fail: errors.New("etcd unreachable")}
	s := start(t, t.TempDir(), q, m)
	res := s.Handle(context.Background(), queue.Batch{Messages: [][]byte{hint(t, queue.TopicStreamWrite, "sw", 0, "w")}})
	if err := res.Errs[0]; err == nil || errors.Is(err, queue.ErrInvalidMessage) {
		t.Fatalf("unmarked hint: %v, want a retryable failure", err)
	}
	if st := s.Stats(); st.Pending != 0 {
		t.Fatalf("an unmarked hint was kept: %+v", st)
	}

	m.mu.Lock()
	m.fail = nil
	m.mu.Unlock()
	res = s.Handle(context.Background(), queue.Batch{Messages: [][]byte{
		hint(t, queue.TopicStreamWrite, "sw", 0, "bad"), hint(t, queue.TopicStreamWrite, "sw", 0, "w"),
		hint(t, queue.TopicStreamWrite, "deleted", 1, "w"),
	}})
	if res.Errs[0] != nil || res.Errs[1] != nil || res.Errs[2] != nil {
		t.Fatalf("hints: %v", res.Errs)
	}
	poll.Until(t, "the refused write's hint and the deleted group's dropped", func() bool { return s.Stats().Dropped == 2 })
	if st := s.Stats(); st.Pending != 1 || st.Delivered != 0 {
		t.Fatalf("stats %+v, want the other hint still pending", st)
	}
	if got := m.pairs(); !slices.Equal(got, []string{"sw/0"}) {
		t.Fatalf("marks %v, want sw/0 kept while a hint of it is pending", got)
	}
}
