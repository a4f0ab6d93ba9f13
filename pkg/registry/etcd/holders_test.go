package etcd

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
)

// TestHoldersRecordedAndFollowed: a recorder writes each (group, shard)
// once; a watcher sees every node's records, skips keys that do not parse,
// and drops a record deleted by an operator retiring a node.
func TestHoldersRecordedAndFollowed(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	cfg := nodeTestConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, err := NewHolderRecorder(cfg, cli, func() string { return "data-a" })
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewHolderRecorder(cfg, cli, func() string { return "data-b" })
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, shard := range []uint32{2, 0} {
			if err := a.Record(ctx, "sw", shard); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Record(ctx, "sw", 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, "mw", 0); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, cfg.holderKey("data-a", "sw", 2))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Fatalf("record of data-a sw/2 = %v, %v: want one key written once", resp.Kvs, err)
	}
	if err := a.Record(ctx, "a/b", 0); err == nil {
		t.Fatal("a group with '/' recorded")
	}
	if _, err := cli.Put(ctx, cfg.holdersPrefix()+"junk", "x"); err != nil {
		t.Fatal(err)
	}

	w, err := NewHolderWatcher(cfg, cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last Holders
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(wctx, func(h Holders) { mu.Lock(); last = h; mu.Unlock() })
	}()
	defer func() { wcancel(); <-done }()
	current := func() Holders { mu.Lock(); defer mu.Unlock(); return last }
	want := Holders{Held: map[string]map[string][]uint32{"sw": {"data-a": {0, 2}, "data-b": {1}}, "mw": {"data-b": {0}}},
		Hinted: map[string]map[string][]uint32{}}
	poll.Within(t, 10*time.Second, "the watcher sees every record", func() bool { return reflect.DeepEqual(current(), want) })
	if w.Skipped() == 0 {
		t.Error("an unparsable record was not counted as skipped")
	}

	if err := b.Record(ctx, "sw", 3); err != nil {
		t.Fatal(err)
	}
	want.Held["sw"]["data-b"] = []uint32{1, 3}
	poll.Within(t, 10*time.Second, "a new record is followed", func() bool { return reflect.DeepEqual(current(), want) })

	// A hinted mark: the shard is held and hinted; cleared, held only.
	if err := b.Mark(ctx, "mw", 5); err != nil {
		t.Fatal(err)
	}
	want.Held["mw"]["data-b"] = []uint32{0, 5}
	want.Hinted["mw"] = map[string][]uint32{"data-b": {5}}
	poll.Within(t, 10*time.Second, "a hinted mark is followed", func() bool { return reflect.DeepEqual(current(), want) })
	if err := b.Clear(ctx, "mw", 5); err != nil {
		t.Fatal(err)
	}
	want.Held["mw"]["data-b"] = []uint32{0}
	want.Hinted = map[string]map[string][]uint32{}
	poll.Within(t, 10*time.Second, "a cleared mark is gone", func() bool { return reflect.DeepEqual(current(), want) })

	if _, err := cli.Delete(ctx, cfg.holdersPrefix()+"data-a/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	delete(want.Held["sw"], "data-a")
	poll.Within(t, 10*time.Second, "a retired node's records are gone", func() bool {
		return fmt.Sprint(current()) == fmt.Sprint(want)
	})
}
