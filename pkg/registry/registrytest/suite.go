package registrytest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

// Run runs the conformance suite; newStore returns an empty store that
// lives until the test ends.
func Run(t *testing.T, newStore func(t *testing.T) registry.SchemaStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s registry.SchemaStore)
	}{
		{"CRUD", testCRUD},
		{"Sentinels", testSentinels},
		{"InvalidStoresNothing", testInvalidStoresNothing},
		{"GroupDelete", testGroupDelete},
		{"Members", testMembers},
		{"MemberDependencies", testMemberDependencies},
		{"GroupDeleteTakesEveryKind", testGroupDeleteEveryKind},
		{"WatchSnapshotThenEvents", testWatchSnapshotThenEvents},
		{"WatchersConvergeAfterBurst", testWatchersConverge},
		{"WatchEndsOnCancel", testWatchEndsOnCancel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s registry.Writer, m proto.Message) int64 {
	t.Helper()
	rev, err := s.Create(ctxT(t), m)
	if err != nil {
		t.Fatalf("create %v: %v", m, err)
	}
	return rev
}

func wantErr(t *testing.T, err error, sentinel error, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v, want %v", what, err, sentinel)
	}
}

func testCRUD(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	r1 := mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	r2 := mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	in := NewStream("sw", "logs")
	in.Metadata.CreateRevision, in.Metadata.ModRevision = 999, 999 // never trusted
	r3 := mustCreate(t, s, in)
	r4 := mustCreate(t, s, NewMeasure("mw", "cpu"))
	if r1 <= 0 || r2 <= r1 || r3 <= r2 || r4 <= r3 {
		t.Fatalf("revisions not increasing: %d %d %d %d", r1, r2, r3, r4)
	}

	got, err := s.Get(ctx, registry.StreamKey("sw", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	st := got.Message.(*databasev1.Stream)
	if got.Revision != r3 || st.GetMetadata().GetModRevision() != r3 || st.GetMetadata().GetCreateRevision() != r3 {
		t.Fatalf("stream revisions = obj %d, metadata create %d mod %d; want %d",
			got.Revision, st.GetMetadata().GetCreateRevision(), st.GetMetadata().GetModRevision(), r3)
	}
	if st.GetUpdatedAt() == nil {
		t.Fatal("updated_at not set")
	}
	want := NewStream("sw", "logs")
	cmp := proto.Clone(st).(*databasev1.Stream)
	cmp.Metadata.CreateRevision, cmp.Metadata.ModRevision, cmp.UpdatedAt = 0, 0, nil
	if !proto.Equal(cmp, want) {
		t.Fatalf("get = %v, want %v", cmp, want)
	}

	upd := NewStream("sw", "logs")
	upd.TagFamilies[0].Tags = append(upd.TagFamilies[0].Tags, &databasev1.TagSpec{Name: "extra", Type: databasev1.TagType_TAG_TYPE_INT})
	r5, err := s.Update(ctx, upd)
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.Get(ctx, registry.StreamKey("sw", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	md := registry.Metadata(got.Message)
	if r5 <= r4 || got.Revision != r5 || md.GetModRevision() != r5 || md.GetCreateRevision() != r3 {
		t.Fatalf("after update: rev %d obj %d create %d mod %d; want mod %d create %d", r5, got.Revision, md.GetCreateRevision(), md.GetModRevision(), r5, r3)
	}
	if n := len(got.Message.(*databasev1.Stream).GetTagFamilies()[0].GetTags()); n != 3 {
		t.Fatalf("update not stored: %d tags", n)
	}

	g, err := s.Get(ctx, registry.GroupKey("sw"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Revision != r1 || g.Message.(*commonv1.Group).GetCatalog() != commonv1.Catalog_CATALOG_STREAM {
		t.Fatalf("group = %v", g)
	}

	mustCreate(t, s, NewStream("sw", "alogs"))
	for _, c := range []struct {
		kind  registry.Kind
		group string
		want  []string
	}{
		{registry.KindGroup, "", []string{"mw", "sw"}},
		{registry.KindStream, "", []string{"alogs", "logs"}},
		{registry.KindStream, "sw", []string{"alogs", "logs"}},
		{registry.KindStream, "mw", nil},
		{registry.KindMeasure, "mw", []string{"cpu"}},
	} {
		objs, err := s.List(ctx, c.kind, c.group)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.Name)
		}
		if fmt.Sprint(names) != fmt.Sprint(c.want) {
			t.Errorf("list %s %q = %v, want %v", c.kind, c.group, names, c.want)
		}
	}

	r6, err := s.Delete(ctx, registry.StreamKey("sw", "logs"))
	if err != nil || r6 <= r5 {
		t.Fatalf("delete: rev %d err %v", r6, err)
	}
	_, err = s.Get(ctx, registry.StreamKey("sw", "logs"))
	wantErr(t, err, registry.ErrNotFound, "get after delete")
	_, err = s.Delete(ctx, registry.MeasureKey("mw", "cpu"))
	if err != nil {
		t.Fatal(err)
	}
	// Recreating starts a new life: a new create revision.
	r7 := mustCreate(t, s, NewMeasure("mw", "cpu"))
	got, err = s.Get(ctx, registry.MeasureKey("mw", "cpu"))
	if err != nil || registry.Metadata(got.Message).GetCreateRevision() != r7 {
		t.Fatalf("recreated measure: %v, %v, want create revision %d", got, err, r7)
	}
}

func testSentinels(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	mustCreate(t, s, NewStream("sw", "logs"))

	_, err := s.Create(ctx, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	wantErr(t, err, registry.ErrAlreadyExists, "duplicate group")
	_, err = s.Create(ctx, NewStream("sw", "logs"))
	wantErr(t, err, registry.ErrAlreadyExists, "duplicate stream")

	_, err = s.Get(ctx, registry.StreamKey("sw", "nope"))
	wantErr(t, err, registry.ErrNotFound, "get missing stream")
	_, err = s.Get(ctx, registry.GroupKey("nope"))
	wantErr(t, err, registry.ErrNotFound, "get missing group")
	_, err = s.Update(ctx, NewStream("sw", "nope"))
	wantErr(t, err, registry.ErrNotFound, "update missing stream")
	_, err = s.Update(ctx, NewGroup("nope", commonv1.Catalog_CATALOG_STREAM))
	wantErr(t, err, registry.ErrNotFound, "update missing group")
	_, err = s.Delete(ctx, registry.MeasureKey("mw", "nope"))
	wantErr(t, err, registry.ErrNotFound, "delete missing measure")
	_, err = s.DeleteGroup(ctx, "nope", registry.DeleteGroupOptions{})
	wantErr(t, err, registry.ErrNotFound, "delete missing group")

	_, err = s.Create(ctx, NewStream("nope", "logs"))
	wantErr(t, err, registry.ErrGroupNotFound, "stream in missing group")
	wantErr(t, err, registry.ErrFailedPrecondition, "stream in missing group")
	_, err = s.Update(ctx, NewMeasure("nope", "cpu"))
	wantErr(t, err, registry.ErrGroupNotFound, "update measure in missing group")
	_, err = s.Create(ctx, NewStream("mw", "logs"))
	wantErr(t, err, registry.ErrFailedPrecondition, "stream in measure group")
	if errors.Is(err, registry.ErrGroupNotFound) {
		t.Fatalf("stream in measure group: %v must not be ErrGroupNotFound", err)
	}
	_, err = s.Create(ctx, NewMeasure("sw", "cpu"))
	wantErr(t, err, registry.ErrFailedPrecondition, "measure in stream group")

	_, err = s.Update(ctx, NewGroup("sw", commonv1.Catalog_CATALOG_MEASURE))
	var ia *registry.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "group.catalog" {
		t.Fatalf("catalog change: %v, want InvalidArgumentError on group.catalog", err)
	}

	props := NewGroup("props", commonv1.Catalog_CATALOG_PROPERTY)
	props.ResourceOpts.Ttl = &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 7}
	_, err = s.Create(ctx, props)
	if !errors.As(err, &ia) || ia.Field != "group.resource_opts.ttl" {
		t.Fatalf("property group with a ttl: %v, want InvalidArgumentError on group.resource_opts.ttl", err)
	}
	_, err = s.DeleteGroup(ctx, "sw", registry.DeleteGroupOptions{DataOnly: true})
	wantErr(t, err, registry.ErrUnimplemented, "data_only")

	_, err = s.Get(ctx, registry.StreamKey("a/b", "c"))
	wantErr(t, err, registry.ErrInvalidArgument, "get with '/' in group")
	_, err = s.Create(ctx, nil)
	wantErr(t, err, registry.ErrInvalidArgument, "create nil")
}

func testInvalidStoresNothing(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	bad := NewStream("sw", "logs")
	bad.Entity.TagNames = []string{"service", "missing"}
	_, err := s.Create(ctx, bad)
	var ia *registry.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "stream.entity.tag_names[1]" || !errors.Is(err, registry.ErrInvalidArgument) {
		t.Fatalf("create bad stream: %v, want InvalidArgumentError on stream.entity.tag_names[1]", err)
	}
	_, err = s.Get(ctx, registry.StreamKey("sw", "logs"))
	wantErr(t, err, registry.ErrNotFound, "invalid stream must not be stored")

	g := NewGroup("zero", commonv1.Catalog_CATALOG_STREAM)
	g.ResourceOpts.ShardNum = 0
	_, err = s.Create(ctx, g)
	if !errors.As(err, &ia) || ia.Field != "group.resource_opts.shard_num" {
		t.Fatalf("create group with 0 shards: %v", err)
	}
	_, err = s.Get(ctx, registry.GroupKey("zero"))
	wantErr(t, err, registry.ErrNotFound, "invalid group must not be stored")

	mustCreate(t, s, NewStream("sw", "logs"))
	before, _ := s.Get(ctx, registry.StreamKey("sw", "logs"))
	bad = NewStream("sw", "logs")
	bad.TagFamilies[0].Tags[1].Type = 0
	_, err = s.Update(ctx, bad)
	if !errors.As(err, &ia) || ia.Field != "stream.tag_families[0].tags[1].type" {
		t.Fatalf("update with bad tag type: %v", err)
	}
	after, _ := s.Get(ctx, registry.StreamKey("sw", "logs"))
	if after.Revision != before.Revision {
		t.Fatalf("invalid update changed the stream: revision %d → %d", before.Revision, after.Revision)
	}
}

func testGroupDelete(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	mustCreate(t, s, NewStream("sw", "logs"))
	mustCreate(t, s, NewStream("sw", "spans"))
	mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	mustCreate(t, s, NewMeasure("mw", "cpu"))
	mustCreate(t, s, NewGroup("empty", commonv1.Catalog_CATALOG_STREAM))

	info, err := s.DeleteGroup(ctx, "sw", registry.DeleteGroupOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(info.GetStreams()) != "[logs spans]" || len(info.GetMeasures()) != 0 {
		t.Fatalf("dry run info = %v", info)
	}
	if got := len(StoreState(t, s)); got != 6 {
		t.Fatalf("dry run deleted something: %d objects left, want 6", got)
	}

	_, err = s.DeleteGroup(ctx, "sw", registry.DeleteGroupOptions{})
	wantErr(t, err, registry.ErrFailedPrecondition, "non-empty group without force")
	if !strings.Contains(err.Error(), "logs") || !strings.Contains(err.Error(), "spans") {
		t.Fatalf("refusal %q does not name the streams it holds", err)
	}
	_, err = s.Delete(ctx, registry.GroupKey("mw"))
	wantErr(t, err, registry.ErrFailedPrecondition, "Delete of non-empty group")
	if _, err := s.Get(ctx, registry.GroupKey("sw")); err != nil {
		t.Fatalf("refused delete removed the group: %v", err)
	}

	info, err = s.DeleteGroup(ctx, "sw", registry.DeleteGroupOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(info.GetStreams()) != "[logs spans]" {
		t.Fatalf("force info = %v", info)
	}
	for _, k := range []registry.Key{registry.GroupKey("sw"), registry.StreamKey("sw", "logs"), registry.StreamKey("sw", "spans")} {
		_, err := s.Get(ctx, k)
		wantErr(t, err, registry.ErrNotFound, "after force delete: "+k.String())
	}
	_, err = s.Create(ctx, NewStream("sw", "logs"))
	wantErr(t, err, registry.ErrGroupNotFound, "stream in force-deleted group")

	if _, err := s.DeleteGroup(ctx, "empty", registry.DeleteGroupOptions{}); err != nil {
		t.Fatalf("delete empty group: %v", err)
	}
	if _, err := s.Delete(ctx, registry.MeasureKey("mw", "cpu")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, registry.GroupKey("mw")); err != nil {
		t.Fatalf("Delete emptied group: %v", err)
	}
	if got := StoreState(t, s); len(got) != 0 {
		t.Fatalf("left over: %v", got)
	}
}

func testWatchSnapshotThenEvents(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	mustCreate(t, s, NewStream("sw", "logs"))
	m := NewMirror()
	var mu sync.Mutex
	var applied []int64
	var batches [][]registry.Event
	rec := &recorder{Mirror: m, apply: func(rev int64, evs []registry.Event) {
		mu.Lock()
		applied = append(applied, rev)
		batches = append(batches, evs)
		mu.Unlock()
	}}
	StartWatch(t, s, rec)
	m.WaitConverged(t, StoreState(t, s), 10*time.Second)

	mustCreate(t, s, NewStream("sw", "spans"))
	if _, err := s.Update(ctx, NewStream("sw", "logs")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, registry.StreamKey("sw", "spans")); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, NewStream("sw", "spans"))
	m.WaitConverged(t, StoreState(t, s), 10*time.Second)
	o, _ := m.Object(registry.StreamKey("sw", "logs"))
	if md := registry.Metadata(o.Message); md == nil || md.GetModRevision() != o.Revision {
		t.Fatalf("watched object metadata %v, want mod_revision %d", md, o.Revision)
	}

	// A forced group delete is one revision holding every delete.
	rev := m.Rev()
	if _, err := s.DeleteGroup(ctx, "sw", registry.DeleteGroupOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	m.WaitConverged(t, map[registry.Key]int64{}, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 5 {
		t.Fatalf("applied revisions %v, want 5 (4 writes + group delete)", applied)
	}
	last := batches[len(batches)-1]
	if len(last) != 3 || applied[4] <= rev {
		t.Fatalf("force delete delivered as %v at %d, want 3 deletes in one revision", last, applied[4])
	}
	for _, ev := range last {
		if ev.Type != registry.EventDelete {
			t.Fatalf("force delete event %v", ev)
		}
	}
}

// recorder is a Mirror that also reports each Apply.
type recorder struct {
	*Mirror
	apply func(rev int64, evs []registry.Event)
}

func (r *recorder) Apply(rev int64, evs []registry.Event) {
	r.apply(rev, evs)
	r.Mirror.Apply(rev, evs)
}

func testWatchersConverge(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	a, b := NewMirror(), NewMirror()
	StartWatch(t, s, a)
	StartWatch(t, s, b)

	const workers, ops = 8, 1000
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range ops / workers {
				name := fmt.Sprintf("s%02d", rng.IntN(24))
				var m proto.Message = NewStream("sw", name)
				key := registry.StreamKey("sw", name)
				if rng.IntN(2) == 0 {
					m, key = NewMeasure("mw", name), registry.MeasureKey("mw", name)
				}
				var err error
				switch rng.IntN(3) {
				case 0:
					_, err = s.Create(ctx, m)
				case 1:
					_, err = s.Update(ctx, m)
				default:
					_, err = s.Delete(ctx, key)
				}
				if err != nil && !errors.Is(err, registry.ErrAlreadyExists) && !errors.Is(err, registry.ErrNotFound) {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	want := StoreState(t, s)
	a.WaitConverged(t, want, 20*time.Second)
	b.WaitConverged(t, want, 20*time.Second)
	if a.Rev() != b.Rev() {
		t.Fatalf("watchers ended at revisions %d and %d", a.Rev(), b.Rev())
	}
}

func testWatchEndsOnCancel(t *testing.T, s registry.SchemaStore) {
	m := NewMirror()
	stop := StartWatch(t, s, m)
	Eventually(t, 10*time.Second, func() bool { return m.Resets() > 0 }, func() string { return "no snapshot" })
	stop() // fails the test unless Watch returns context.Canceled promptly
}
