package etcd

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/registry/registrytest"
)

func schemaTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	client := srv.Client()
	registrytest.Run(t, func(t *testing.T) registry.SchemaStore {
		// One etcd for the suite; a namespace per subtest keeps them apart.
		return New(Config{Namespace: strings.ReplaceAll(t.Name(), "/", "_")}, client, nil)
	})
}

// A watcher whose next revision was compacted away re-lists and ends with
// the right state.
func TestWatchRelistsAfterCompaction(t *testing.T) {
	ctx := schemaTestCtx(t)
	srv := etcdtest.Start(t)
	client := srv.Client()
	s := New(Config{}, client, nil)
	if _, err := s.Create(ctx, registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, registrytest.NewStream("sw", "old")); err != nil {
		t.Fatal(err)
	}

	// Hold the watcher inside its first Reset: it has listed at R but not
	// yet started watching from R+1. Meanwhile write and compact past R.
	entered, release := make(chan struct{}), make(chan struct{})
	m := registrytest.NewMirror()
	m.BeforeReset = func(n int) {
		if n == 1 {
			close(entered)
			<-release
		}
	}
	registrytest.StartWatch(t, s, m)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("watch never listed")
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Create(ctx, registrytest.NewStream("sw", n)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Delete(ctx, registry.StreamKey("sw", "old")); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	close(release)

	want := registrytest.StoreState(t, s)
	m.WaitConverged(t, want, 10*time.Second)
	if m.Resets() < 2 || s.Resyncs() == 0 {
		t.Fatalf("resets %d, resyncs %d: the watcher did not re-list after compaction", m.Resets(), s.Resyncs())
	}
	if _, ok := want[registry.StreamKey("sw", "old")]; ok {
		t.Fatal("deleted stream still listed")
	}
	// And it keeps following afterwards.
	if _, err := s.Create(ctx, registrytest.NewStream("sw", "d")); err != nil {
		t.Fatal(err)
	}
	m.WaitConverged(t, registrytest.StoreState(t, s), 10*time.Second)
}

// Values under the prefix that are not valid schema objects are skipped and
// counted by reads and watches; they never reach a handler.
func TestGarbageIsSkippedAndCounted(t *testing.T) {
	ctx := schemaTestCtx(t)
	srv := etcdtest.Start(t)
	client := srv.Client()
	s := New(Config{Namespace: "ns"}, client, nil)
	if _, err := s.Create(ctx, registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, registrytest.NewStream("sw", "logs")); err != nil {
		t.Fatal(err)
	}
	put := func(k, v string) {
		t.Helper()
		if _, err := client.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	put("ns/schema/stream/sw/garbage", "\xff\xff\xff not a proto")
	put("ns/schema/widget/sw/x", "")          // unknown kind
	put("ns/schema/stream/sw/empty", "")      // decodes, but invalid (no metadata)
	put("ns/schema/group/bad/extra/part", "") // malformed key

	objs, err := s.List(ctx, registry.KindStream, "sw")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Name != "logs" {
		t.Fatalf("list = %v, want only logs", objs)
	}
	if s.Skipped() < 2 {
		t.Fatalf("skipped %d after list, want ≥ 2", s.Skipped())
	}

	m := registrytest.NewMirror()
	registrytest.StartWatch(t, s, m)
	m.WaitConverged(t, registrytest.StoreState(t, s), 10*time.Second)
	before := s.Skipped()
	put("ns/schema/measure/sw/junk", "\x00\x01garbage")
	// Overwriting a valid stream with garbage removes it from the watched
	// state, as it is from List.
	put("ns/schema/stream/sw/logs", "\xffjunk")
	if _, err := s.Create(ctx, registrytest.NewStream("sw", "spans")); err != nil {
		t.Fatal(err)
	}
	want := registrytest.StoreState(t, s)
	if _, ok := want[registry.StreamKey("sw", "logs")]; ok {
		t.Fatal("garbage stream listed")
	}
	m.WaitConverged(t, want, 10*time.Second)
	if s.Skipped() <= before {
		t.Fatalf("watch did not count skipped values: %d", s.Skipped())
	}
}

// A watcher survives an etcd restart (the client resumes the watch from the
// last revision it saw, or the store re-lists) and sees writes made after it.
func TestWatchSurvivesRestart(t *testing.T) {
	ctx := schemaTestCtx(t)
	srv := etcdtest.Start(t)
	client := srv.Client()
	s := New(Config{}, client, nil)
	if _, err := s.Create(ctx, registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)); err != nil {
		t.Fatal(err)
	}
	m := registrytest.NewMirror()
	registrytest.StartWatch(t, s, m)
	m.WaitConverged(t, registrytest.StoreState(t, s), 10*time.Second)
	srv.Restart()
	if _, err := s.Create(ctx, registrytest.NewStream("sw", "after")); err != nil {
		t.Fatal(err)
	}
	m.WaitConverged(t, registrytest.StoreState(t, s), 20*time.Second)
}

func TestConfigValidate(t *testing.T) {
	for ns, ok := range map[string]bool{"": true, "banyand": true, "a/b": true, "a/": false, "a\x00": false} {
		c := Config{Namespace: ns}
		if err := c.Validate(); (err == nil) != ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", ns, err, ok)
		}
	}
}
