package local

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/registrytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func open(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T) registry.SchemaStore {
		return open(t, Config{Dir: t.TempDir()})
	})
}

func TestReopenKeepsObjectsAndRevisions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Config{Dir: dir})
	if _, err := s.Create(ctx, registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, registrytest.NewStream("sw", "logs")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, registrytest.NewStream("sw", "logs")); err != nil {
		t.Fatal(err)
	}
	before := registrytest.StoreState(t, s)
	rev := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, registry.GroupKey("sw")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close: %v, want ErrClosed", err)
	}

	s2 := open(t, Config{Dir: dir})
	after := registrytest.StoreState(t, s2)
	if len(after) != 2 || after[registry.GroupKey("sw")] != before[registry.GroupKey("sw")] ||
		after[registry.StreamKey("sw", "logs")] != before[registry.StreamKey("sw", "logs")] {
		t.Fatalf("after reopen %v, want %v", after, before)
	}
	o, err := s2.Get(ctx, registry.StreamKey("sw", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	if md := registry.Metadata(o.Message); md.GetCreateRevision() != 2 || md.GetModRevision() != 3 {
		t.Fatalf("revisions after reopen: create %d mod %d, want 2 and 3", md.GetCreateRevision(), md.GetModRevision())
	}
	// The counter survives: the next write does not reuse a revision.
	next, err := s2.Create(ctx, registrytest.NewStream("sw", "spans"))
	if err != nil {
		t.Fatal(err)
	}
	if next != rev+1 {
		t.Fatalf("first revision after reopen %d, want %d", next, rev+1)
	}
}

// A watcher that stops consuming is dropped rather than blocking writers,
// and resyncs to the right state once it resumes.
func TestSlowWatcherResyncs(t *testing.T) {
	ctx := context.Background()
	s := open(t, Config{Dir: t.TempDir(), WatchBuffer: 2})
	if _, err := s.Create(ctx, registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	blocked := make(chan struct{}, 1)
	m := registrytest.NewMirror()
	m.BeforeApply = func(int64) {
		select {
		case blocked <- struct{}{}:
			<-release // hold only the first Apply
		default:
		}
	}
	registrytest.StartWatch(t, s, m)
	registrytest.Eventually(t, 10*time.Second, func() bool { return m.Resets() == 1 }, func() string { return "no snapshot" })

	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, n := range names {
			if _, err := s.Create(ctx, registrytest.NewStream("sw", n)); err != nil {
				t.Error(err)
			}
		}
	}()
	select {
	case <-done: // writers were not held up by the stuck watcher
	case <-time.After(10 * time.Second):
		t.Fatal("writes blocked behind a stuck watcher")
	}
	close(release)
	m.WaitConverged(t, registrytest.StoreState(t, s), 10*time.Second)
	if m.Resets() < 2 || s.Resyncs() == 0 {
		t.Fatalf("resets %d, resyncs %d; want a resync", m.Resets(), s.Resyncs())
	}
}

func TestWatchEndsWhenClosed(t *testing.T) {
	s := open(t, Config{Dir: t.TempDir()})
	done := make(chan error, 1)
	m := registrytest.NewMirror()
	go func() { done <- s.Watch(context.Background(), m) }()
	registrytest.Eventually(t, 10*time.Second, func() bool { return m.Resets() == 1 }, func() string { return "no snapshot" })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Watch returned %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after Close")
	}
}
