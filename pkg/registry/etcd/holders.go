package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Holder records say which data nodes hold data of which shard of a group:
// <Namespace>/holders/<node>/<group>/<shard>, its value the time of the
// record. A data node records a (group, shard) before it acknowledges the
// first write of it (HolderRecorder), and liaisons follow the records
// (HolderWatcher), so a query knows every node whose answer it needs, also
// nodes that have left the node table: a node that is down still holds its
// data. Records are not under a lease and stay until deleted; retiring a
// node for good, with its data, is `etcdctl del --prefix
// <Namespace>/holders/<node>/`.
//
// A hinted mark, <Namespace>/holders/<node>/<group>/<shard>/hinted, says
// that the node keeps hints of the pair (banyand/handoff): writes acked
// with fewer copies than the group's replicas, some of which only it
// holds. A query that cannot reach such a node misses them even if
// another holder of the shard answers.

// holdersPrefix is the prefix of every holder record.
func (c NodeConfig) holdersPrefix() string { return c.Namespace + "/holders/" }

func (c NodeConfig) holderKey(node, group string, shard uint32) string {
	return c.holdersPrefix() + node + "/" + group + "/" + strconv.FormatUint(uint64(shard), 10)
}

// HolderRecorder records what one data node holds. It is safe for
// concurrent use; a pair is written to etcd once per process.
type HolderRecorder struct {
	cfg NodeConfig
	cli *clientv3.Client
	// node is the data node's registry name; it may be known only once
	// its listener is bound, before the first write arrives.
	node func() string
	// recorded holds the pairs known to be in etcd.
	recorded sync.Map // holderPair → struct{}
}

type holderPair struct {
	group string
	shard uint32
}

// NewHolderRecorder returns the recorder of the data node that name
// names (its registry name, asked at the first record).
func NewHolderRecorder(cfg NodeConfig, cli *clientv3.Client, name func() string) (*HolderRecorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cli == nil || name == nil {
		return nil, errors.New("etcd holder recorder: nil client or name")
	}
	return &HolderRecorder{cfg: cfg.withDefaults(), cli: cli, node: name}, nil
}

// Record makes sure etcd says this node holds data of (group, shard); it
// returns once that is durable in etcd, so a caller that records before it
// acknowledges a write never acknowledges data no liaison will look for.
func (r *HolderRecorder) Record(ctx context.Context, group string, shard uint32) error {
	p := holderPair{group, shard}
	if _, ok := r.recorded.Load(p); ok {
		return nil
	}
	key, err := r.key(group, shard)
	if err != nil {
		return err
	}
	if _, err := r.cli.Put(ctx, key, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("record holder of %s/%d: %w", group, shard, err)
	}
	r.recorded.Store(p, struct{}{})
	return nil
}

// key is the holder record of (group, shard) for this node.
func (r *HolderRecorder) key(group string, shard uint32) (string, error) {
	if group == "" || strings.ContainsAny(group, "/\x00") {
		return "", fmt.Errorf("etcd holder recorder: group %q must be non-empty without '/' or NUL", group)
	}
	node := r.node()
	if node == "" || strings.ContainsAny(node, "/\x00") {
		return "", fmt.Errorf("etcd holder recorder: node name %q must be non-empty without '/' or NUL", node)
	}
	return r.cfg.holderKey(node, group, shard), nil
}

// hintedSuffix ends a hinted mark's key.
const hintedSuffix = "/hinted"

// Mark records that this node keeps hints of (group, shard); it returns
// once that is durable in etcd (banyand/handoff.Marker).
func (r *HolderRecorder) Mark(ctx context.Context, group string, shard uint32) error {
	key, err := r.key(group, shard)
	if err != nil {
		return err
	}
	if _, err := r.cli.Put(ctx, key+hintedSuffix, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("mark hints of %s/%d: %w", group, shard, err)
	}
	return nil
}

// Clear removes the mark Mark made.
func (r *HolderRecorder) Clear(ctx context.Context, group string, shard uint32) error {
	key, err := r.key(group, shard)
	if err != nil {
		return err
	}
	if _, err := r.cli.Delete(ctx, key+hintedSuffix); err != nil {
		return fmt.Errorf("clear the hint mark of %s/%d: %w", group, shard, err)
	}
	return nil
}

// Holders is what the records say, group → node → shards, sorted: Held,
// the shards each node holds data of (a hinted shard counts as held), and
// Hinted, those it keeps hints of. Handlers own what they receive.
type Holders struct {
	Held, Hinted map[string]map[string][]uint32
}

// HolderWatcher follows the holder records of a namespace.
type HolderWatcher struct {
	cfg     NodeConfig
	cli     *clientv3.Client
	log     *slog.Logger
	skipped atomic.Int64
	relists atomic.Int64
}

// NewHolderWatcher returns a watcher reading through cli; it does no I/O.
// A nil log means slog.Default().
func NewHolderWatcher(cfg NodeConfig, cli *clientv3.Client, log *slog.Logger) (*HolderWatcher, error) {
	cfg, log, err := watcherSetup("holder-watcher", cfg, cli, log)
	if err != nil {
		return nil, err
	}
	return &HolderWatcher{cfg: cfg, cli: cli, log: log}, nil
}

// Skipped counts records whose key does not parse, each time it was read.
func (w *HolderWatcher) Skipped() int64 { return w.skipped.Load() }

// Watch calls h with the complete holder set after the first list and
// after every change, serially, until ctx is done; it then returns
// ctx.Err(). While etcd is unreachable h keeps the last set.
func (w *HolderWatcher) Watch(ctx context.Context, h func(Holders)) error {
	s := &holderWatch{w: w, prefix: w.cfg.holdersPrefix(), h: h, pairs: map[string]holderRecord{}}
	return follow(ctx, followConfig{cli: w.cli, log: w.log, prefix: s.prefix,
		retryMin: w.cfg.RetryMin, retryMax: w.cfg.RetryMax, relists: &w.relists}, s)
}

// holderRecord is one parsed record.
type holderRecord struct {
	node, group string
	shard       uint32
	hinted      bool // a hinted mark
}

type holderWatch struct {
	w      *HolderWatcher
	prefix string
	h      func(Holders)
	pairs  map[string]holderRecord // by key
}

func (s *holderWatch) listed(_ int64, kvs []*mvccpb.KeyValue) {
	s.pairs = make(map[string]holderRecord, len(kvs))
	for _, kv := range kvs {
		s.put(kv)
	}
	s.deliver()
}

func (s *holderWatch) changed(_ int64, evs []*clientv3.Event) {
	for _, ev := range evs {
		if ev.Type == clientv3.EventTypeDelete {
			delete(s.pairs, string(ev.Kv.Key))
			continue
		}
		s.put(ev.Kv)
	}
	s.deliver()
}

func (s *holderWatch) put(kv *mvccpb.KeyValue) {
	rec, err := parseHolderKey(strings.TrimPrefix(string(kv.Key), s.prefix))
	if err != nil {
		s.w.skipped.Add(1)
		s.w.log.Warn("skipping invalid holder record", "key", string(kv.Key), "err", err)
		return
	}
	s.pairs[string(kv.Key)] = rec
}

func (s *holderWatch) deliver() {
	out := Holders{Held: map[string]map[string][]uint32{}, Hinted: map[string]map[string][]uint32{}}
	add := func(m map[string]map[string][]uint32, r holderRecord) {
		byNode := m[r.group]
		if byNode == nil {
			byNode = map[string][]uint32{}
			m[r.group] = byNode
		}
		if !slices.Contains(byNode[r.node], r.shard) {
			byNode[r.node] = append(byNode[r.node], r.shard)
		}
	}
	for _, r := range s.pairs {
		add(out.Held, r)
		if r.hinted {
			add(out.Hinted, r)
		}
	}
	for _, m := range []map[string]map[string][]uint32{out.Held, out.Hinted} {
		for _, byNode := range m {
			for n := range maps.Keys(byNode) {
				slices.Sort(byNode[n])
			}
		}
	}
	s.h(out)
}

// parseHolderKey reads <node>/<group>/<shard>, or a hinted mark
// <node>/<group>/<shard>/hinted.
func parseHolderKey(rel string) (holderRecord, error) {
	parts := strings.Split(rel, "/")
	hinted := len(parts) == 4 && "/"+parts[3] == hintedSuffix
	if hinted {
		parts = parts[:3]
	}
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return holderRecord{}, fmt.Errorf("want <node>/<group>/<shard>[%s], got %q", hintedSuffix, rel)
	}
	shard, err := strconv.ParseUint(parts[2], 10, 32)
	if err != nil {
		return holderRecord{}, fmt.Errorf("shard %q: %w", parts[2], err)
	}
	return holderRecord{node: parts[0], group: parts[1], shard: uint32(shard), hinted: hinted}, nil
}
