package etcd

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

func putNode(t *testing.T, cli *clientv3.Client, key string, n *databasev1.Node) {
	t.Helper()
	val, err := proto.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, cli, key, val)
}

func putRaw(t *testing.T, cli *clientv3.Client, key string, val []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, string(val)); err != nil {
		t.Fatal(err)
	}
}

// Watchers get add, update and delete events from registrars.
func TestNodeWatchEvents(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	w := startNodeWatch(t, cli, nil)
	if u := w.last(); len(u.Nodes) != 0 || len(u.Events) != 0 {
		t.Fatalf("first update of an empty registry: %+v", u)
	}

	stop1, _ := runRegister(t, newTestRegistrar(t, cli, nil), testDataNode("d1", "127.0.0.1:1"))
	runRegister(t, newTestRegistrar(t, cli, nil), testDataNode("d2", "127.0.0.1:2"))
	waitNode(t, 5*time.Second, "d1 and d2", func() bool { return w.addr("d1") != "" && w.addr("d2") != "" })

	// The same node restarted with a new label takes over its key: an update.
	upd := testDataNode("d1", "127.0.0.1:1")
	upd.Labels = map[string]string{"capacity": "2"}
	stop1b, _ := runRegister(t, newTestRegistrar(t, cli, nil), upd)
	waitNode(t, 5*time.Second, "d1 update", func() bool { return len(w.events("d1")) == 2 })
	// The old registration's stop no longer owns the key.
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if w.addr("d1") == "" {
		t.Fatal("stopping a replaced registration removed the node")
	}
	if err := stop1b(); err != nil {
		t.Fatal(err)
	}
	waitNode(t, 5*time.Second, "d1 deleted", func() bool { return w.addr("d1") == "" })

	evs := w.events("d1")
	if len(evs) != 3 || evs[0].Type != node.EventAdd || evs[1].Type != node.EventUpdate || evs[2].Type != node.EventDelete {
		t.Fatalf("d1 events %v, want add, update, delete", evs)
	}
	if evs[1].Prev.GetLabels()["capacity"] != "" || evs[1].Node.GetLabels()["capacity"] != "2" {
		t.Fatalf("update: prev %v, node %v", evs[1].Prev, evs[1].Node)
	}
	if evs[2].Node.GetLabels()["capacity"] != "2" {
		t.Fatalf("delete carries %v, want the last value", evs[2].Node)
	}
	if u := w.last(); len(u.Nodes) != 1 || u.Nodes[0].GetMetadata().GetName() != "d2" {
		t.Fatalf("final set %v, want d2", u.Nodes)
	}
}

// A late watcher starts from a snapshot; changes made in one transaction
// arrive in one update, never half-applied.
func TestNodeWatchSnapshotAndTxn(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	cfg := nodeTestConfig()
	putNode(t, cli, cfg.nodeKey("a"), testDataNode("a", "x:1"))
	putNode(t, cli, cfg.nodeKey("b"), testDataNode("b", "x:2"))
	w := startNodeWatch(t, cli, nil)
	first := w.last()
	if len(first.Nodes) != 2 || len(first.Events) != 2 || first.Events[0].Type != node.EventAdd {
		t.Fatalf("first update %+v, want a and b added", first)
	}

	c, _ := proto.Marshal(testDataNode("c", "x:3"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Txn(ctx).Then(
		clientv3.OpDelete(cfg.nodeKey("a")),
		clientv3.OpDelete(cfg.nodeKey("b")),
		clientv3.OpPut(cfg.nodeKey("c"), string(c)),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	waitNode(t, 5*time.Second, "c", func() bool { return w.addr("c") != "" })
	u := w.last()
	if len(u.Nodes) != 1 || len(u.Events) != 3 {
		t.Fatalf("txn update %+v, want 3 events leaving only c", u)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.updates) != 2 {
		t.Fatalf("%d updates, want the snapshot and one for the txn", len(w.updates))
	}
}

// Entries under the prefix that are not valid nodes are skipped, counted and
// logged, in a list as in a watch; they never reach the handler.
func TestNodeWatchSkipsInvalidEntries(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	cfg := nodeTestConfig()
	putRaw(t, cli, cfg.nodeKey("garbage"), []byte("\xff\xff\xff garbage"))
	putNode(t, cli, cfg.nodeKey("role"), &databasev1.Node{
		Metadata: testDataNode("role", "x:1").Metadata, GrpcAddress: "x:1", Roles: []databasev1.Role{42},
	})
	putNode(t, cli, cfg.nodeKey("noaddr"), testDataNode("noaddr", ""))
	putNode(t, cli, cfg.nodeKey("mismatch"), testDataNode("other", "x:1"))
	putNode(t, cli, cfg.nodeKey("ok"), testDataNode("ok", "x:1"))
	// Neighbours of the prefix are not ours at all.
	putRaw(t, cli, cfg.Namespace+"/nodes-archive/x", []byte("garbage"))

	var logs nodeLogBuffer
	w := startNodeWatch(t, cli, nodeTestLogger(&logs))
	if u := w.last(); len(u.Nodes) != 1 || u.Nodes[0].GetMetadata().GetName() != "ok" {
		t.Fatalf("snapshot %v, want only ok", u.Nodes)
	}
	if s := w.w.Stats(); s.Skipped != 4 {
		t.Fatalf("stats %+v, want 4 skipped", s)
	}
	for _, key := range []string{"garbage", "role", "noaddr", "mismatch"} {
		if !strings.Contains(logs.String(), cfg.nodeKey(key)) {
			t.Errorf("no warning names %s", key)
		}
	}

	// Through the watch: new garbage is skipped silently for the handler;
	// garbage over a valid node removes it, as a fresh list would.
	putRaw(t, cli, cfg.nodeKey("garbage2"), []byte("\xff"))
	putRaw(t, cli, cfg.nodeKey("ok"), []byte("\xff"))
	waitNode(t, 5*time.Second, "ok gone", func() bool { return w.addr("ok") == "" })
	if s := w.w.Stats(); s.Skipped != 6 {
		t.Fatalf("stats %+v, want 6 skipped", s)
	}
	if evs := w.events("ok"); len(evs) != 2 || evs[1].Type != node.EventDelete {
		t.Fatalf("ok events %v, want add, delete", evs)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.updates {
		for _, n := range u.Nodes {
			if node.Validate(n) != nil {
				t.Fatalf("invalid node delivered: %v", n)
			}
		}
	}
}

// A watch that starts below the compaction revision ends with an error, so
// Watch lists again instead of missing changes.
func TestNodeWatchCompacted(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	cfg := nodeTestConfig()
	putNode(t, cli, cfg.nodeKey("a"), testDataNode("a", "x:1"))
	putNode(t, cli, cfg.nodeKey("a"), testDataNode("a", "x:2"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	w, err := NewNodeWatcher(cfg, cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &nodeWatch{w: w, prefix: cfg.nodesPrefix(), h: func(node.Update) {}, nodes: map[string]*databasev1.Node{}}
	_, err = watchFrom(ctx, followConfig{cli: cli, log: w.log, prefix: s.prefix}, 1, s)
	if err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("watch below compaction = %v, want a compaction error", err)
	}
}
