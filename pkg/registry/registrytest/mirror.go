package registrytest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/registry"
)

// Mirror is a registry.Handler that keeps the watched state and records
// ordering violations.
type Mirror struct {
	// BeforeReset, if set, runs at the start of every Reset with its
	// 1-based count; a test can block in it to hold the watcher back.
	BeforeReset func(n int)
	// BeforeApply, if set, runs at the start of every Apply.
	BeforeApply func(rev int64)

	mu         sync.Mutex
	objs       map[registry.Key]registry.Object
	rev        int64
	resets     int
	violations []string
}

// NewMirror returns an empty mirror.
func NewMirror() *Mirror { return &Mirror{objs: map[registry.Key]registry.Object{}} }

// Reset implements registry.Handler.
func (m *Mirror) Reset(objs []registry.Object, rev int64) {
	m.mu.Lock()
	n := m.resets + 1
	m.mu.Unlock()
	if m.BeforeReset != nil {
		m.BeforeReset(n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets = n
	if rev < m.rev {
		m.violations = append(m.violations, fmt.Sprintf("reset at %d after revision %d", rev, m.rev))
	}
	m.rev = rev
	m.objs = make(map[registry.Key]registry.Object, len(objs))
	for _, o := range objs {
		if o.Revision > rev {
			m.violations = append(m.violations, fmt.Sprintf("reset at %d holds %s at %d", rev, o.Key, o.Revision))
		}
		m.objs[o.Key] = o
	}
}

// Apply implements registry.Handler.
func (m *Mirror) Apply(rev int64, events []registry.Event) {
	if m.BeforeApply != nil {
		m.BeforeApply(rev)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resets == 0 {
		m.violations = append(m.violations, "apply before reset")
	}
	if rev <= m.rev {
		m.violations = append(m.violations, fmt.Sprintf("apply %d after revision %d", rev, m.rev))
	}
	m.rev = rev
	for _, ev := range events {
		if ev.Object.Revision != rev {
			m.violations = append(m.violations, fmt.Sprintf("%s %s has revision %d in apply %d", ev.Type, ev.Object.Key, ev.Object.Revision, rev))
		}
		switch ev.Type {
		case registry.EventPut:
			m.objs[ev.Object.Key] = ev.Object
		case registry.EventDelete:
			delete(m.objs, ev.Object.Key)
		default:
			m.violations = append(m.violations, fmt.Sprintf("unknown event type %d", ev.Type))
		}
	}
}

// State is the mirrored key → revision map.
func (m *Mirror) State() map[registry.Key]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[registry.Key]int64, len(m.objs))
	for k, o := range m.objs {
		out[k] = o.Revision
	}
	return out
}

// Object returns the mirrored object with key k.
func (m *Mirror) Object(k registry.Key) (registry.Object, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[k]
	return o, ok
}

// Rev is the last revision seen; Resets how many snapshots arrived.
func (m *Mirror) Rev() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev
}

// Resets is the number of snapshots received.
func (m *Mirror) Resets() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resets
}

// Violations lists ordering errors seen so far.
func (m *Mirror) Violations() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.violations...)
}

// StoreState reads every object of r as key → revision.
func StoreState(t testing.TB, r registry.Reader) map[registry.Key]int64 {
	t.Helper()
	out := map[registry.Key]int64{}
	for _, kind := range registry.Kinds {
		objs, err := r.List(context.Background(), kind, "")
		if err != nil {
			t.Fatalf("list %s: %v", kind, err)
		}
		for _, o := range objs {
			out[o.Key] = o.Revision
		}
	}
	return out
}

// Eventually polls cond every few milliseconds until it holds or timeout
// passes, then fails the test with msg().
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %s: %s", timeout, msg())
		}
		<-tick.C
	}
}

// WaitConverged waits until the mirror holds exactly want and reports no
// violations.
func (m *Mirror) WaitConverged(t testing.TB, want map[registry.Key]int64, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() bool { return maps.Equal(m.State(), want) },
		func() string { return fmt.Sprintf("mirror %v, want %v", m.State(), want) })
	if v := m.Violations(); len(v) > 0 {
		t.Fatalf("watch ordering violations: %v", v)
	}
}

// StartWatch runs s.Watch(h) on a goroutine and returns a func that cancels
// it and waits for it to return ctx's error; it is also called at cleanup.
func StartWatch(t testing.TB, s registry.Watcher, h registry.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Watch returned %v after cancel, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Watch did not return within 10s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
