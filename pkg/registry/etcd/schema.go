// Package etcd keeps banyand's registries in etcd: the schema store (Store)
// here, and the node registry (NodeRegistrar, NodeWatcher).
//
// Schema objects live under <namespace>/schema/<kind>/<group>/<name> (groups
// under <namespace>/schema/group/<name>) as marshalled protos. Revisions are
// etcd's: an object's mod_revision is the revision of its last put and
// create_revision that of its first; both are stamped into metadata when the
// object is read, never stored. Writes that depend on other keys (a stream
// on its group, a group delete on its members) are single transactions that
// compare those keys, so a racing writer cannot orphan a stream.
package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/internal/codec"
)

// DefaultNamespace is the key prefix used when Config leaves it empty.
const DefaultNamespace = "banyand"

// schemaMaxAttempts bounds the retries of a transaction whose compared keys kept
// changing under it.
const schemaMaxAttempts = 16

// Config configures a Store.
type Config struct {
	// Namespace prefixes every key; empty means DefaultNamespace. It lets
	// several clusters share one etcd.
	Namespace string
}

// Validate reports a namespace that would make keys ambiguous.
func (c *Config) Validate() error {
	if strings.HasSuffix(c.Namespace, "/") || strings.ContainsRune(c.Namespace, 0) {
		return fmt.Errorf("registry/etcd: namespace %q must not end in '/' or contain NUL", c.Namespace)
	}
	return nil
}

// Store is a registry.SchemaStore on etcd. It is safe for concurrent use and
// starts no goroutines of its own; Watch runs on the caller's.
type Store struct {
	client  *clientv3.Client
	log     *slog.Logger
	prefix  string // <ns>/schema/
	skipped atomic.Uint64
	resyncs atomic.Uint64
}

var _ registry.SchemaStore = (*Store)(nil)

// New returns a store using client, which the caller owns and closes after
// the last call. A nil logger means slog.Default().
func New(cfg Config, client *clientv3.Client, logger *slog.Logger) *Store {
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Store{
		client: client,
		log:    logger.With("component", "registry/etcd"),
		prefix: cfg.Namespace + "/schema/",
	}
}

// Prefix is the key prefix of all schema objects, ending in '/'.
func (s *Store) Prefix() string { return s.prefix }

// Skipped counts the values under the prefix that were ignored because they
// were not valid schema objects (garbage bytes, unknown kinds, invalid or
// mismatched objects), each time one was read.
func (s *Store) Skipped() uint64 { return s.skipped.Load() }

// Resyncs counts the times a watch re-listed after losing its stream.
func (s *Store) Resyncs() uint64 { return s.resyncs.Load() }

func (s *Store) key(k registry.Key) string { return s.prefix + codec.Path(k) }

// decode turns a kv under the prefix into an object, or counts and logs it
// as skipped.
func (s *Store) decode(kv schemaKV) (registry.Object, bool) {
	obj, err := s.parse(kv)
	if err != nil {
		s.skip(string(kv.key), err)
		return registry.Object{}, false
	}
	return obj, true
}

// decodeQuiet is decode without counting: for values already counted.
func (s *Store) decodeQuiet(kv schemaKV) (registry.Object, bool) {
	obj, err := s.parse(kv)
	return obj, err == nil
}

func (s *Store) parse(kv schemaKV) (registry.Object, error) {
	k, err := codec.Parse(strings.TrimPrefix(string(kv.key), s.prefix))
	if err != nil {
		return registry.Object{}, err
	}
	m, err := codec.Decode(k, kv.value)
	if err != nil {
		return registry.Object{}, err
	}
	registry.Stamp(m, kv.createRev, kv.modRev)
	return registry.Object{Key: k, Revision: kv.modRev, Message: m}, nil
}

func (s *Store) skip(key string, err error) {
	s.skipped.Add(1)
	s.log.Warn("skipping invalid schema value", "key", key, "err", err)
}

type schemaKV struct {
	key, value        []byte
	createRev, modRev int64
}

// Get implements registry.Reader.
func (s *Store) Get(ctx context.Context, k registry.Key) (registry.Object, error) {
	if err := registry.ValidateKey(k); err != nil {
		return registry.Object{}, err
	}
	resp, err := s.client.Get(ctx, s.key(k))
	if err != nil {
		return registry.Object{}, fmt.Errorf("registry/etcd: get %s: %w", k, err)
	}
	if len(resp.Kvs) == 0 {
		return registry.Object{}, fmt.Errorf("%s: %w", k, registry.ErrNotFound)
	}
	kv := resp.Kvs[0]
	obj, ok := s.decode(schemaKV{kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision})
	if !ok {
		return registry.Object{}, fmt.Errorf("registry/etcd: %s: stored value is not a valid schema object", k)
	}
	return obj, nil
}

// List implements registry.Reader.
func (s *Store) List(ctx context.Context, kind registry.Kind, group string) ([]registry.Object, error) {
	if !kind.Valid() {
		return nil, &registry.InvalidArgumentError{Field: "kind", Reason: fmt.Sprintf("unknown kind %d", int(kind))}
	}
	p := s.prefix + codec.KindPrefix(kind)
	if kind != registry.KindGroup && group != "" {
		if err := registry.ValidateKey(registry.Key{Kind: kind, Group: group, Name: "x"}); err != nil {
			return nil, err
		}
		p = s.prefix + codec.MembersPrefix(kind, group)
	}
	resp, err := s.client.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("registry/etcd: list %s: %w", kind, err)
	}
	out := make([]registry.Object, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if obj, ok := s.decode(schemaKV{kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision}); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// prepare validates m and returns its key and the bytes to store: a copy
// without client-sent revisions and with updated_at set now.
func prepare(m proto.Message) (registry.Key, []byte, error) {
	if err := registry.Validate(m); err != nil {
		return registry.Key{}, nil, err
	}
	k, _ := registry.KeyOf(m)
	m = proto.Clone(m)
	registry.Prepare(m)
	registry.Stamp(m, 0, 0)
	registry.SetUpdatedAt(m, timestamppb.Now())
	data, err := proto.Marshal(m)
	if err != nil {
		return registry.Key{}, nil, fmt.Errorf("registry/etcd: marshal %s: %w", k, err)
	}
	return k, data, nil
}

// Create implements registry.Writer.
func (s *Store) Create(ctx context.Context, m proto.Message) (int64, error) {
	return s.put(ctx, m, true)
}

// Update implements registry.Writer.
func (s *Store) Update(ctx context.Context, m proto.Message) (int64, error) {
	return s.put(ctx, m, false)
}

// put creates (create) or replaces an object in one transaction that also
// checks that neither the object nor anything it depends on (its group, a
// binding's rules and subject, ...) changed since they were read and
// checked, so a concurrent group delete or catalog change cannot slip in.
func (s *Store) put(ctx context.Context, m proto.Message, create bool) (int64, error) {
	k, data, err := prepare(m)
	if err != nil {
		return 0, err
	}
	op := "update"
	if create {
		op = "create"
	}
	key := s.key(k)
	deps := registry.Dependencies(k, m)
	for range schemaMaxAttempts {
		// One read: the object and its dependencies at one revision.
		reads := []clientv3.Op{clientv3.OpGet(key)}
		for _, d := range deps {
			reads = append(reads, clientv3.OpGet(s.key(d)))
		}
		resp, err := s.client.Txn(ctx).Then(reads...).Commit()
		if err != nil {
			return 0, fmt.Errorf("registry/etcd: %s %s: %w", op, k, err)
		}
		var guards []clientv3.Cmp
		kvOf := func(i int) (schemaKV, bool) {
			kvs := resp.Responses[i].GetResponseRange().GetKvs()
			if len(kvs) == 0 {
				return schemaKV{}, false
			}
			return schemaKV{kvs[0].Key, kvs[0].Value, kvs[0].CreateRevision, kvs[0].ModRevision}, true
		}
		found := map[registry.Key]proto.Message{}
		for i, d := range deps {
			kv, ok := kvOf(i + 1)
			if !ok {
				guards = append(guards, clientv3.Compare(clientv3.CreateRevision(s.key(d)), "=", 0))
				continue
			}
			guards = append(guards, clientv3.Compare(clientv3.ModRevision(s.key(d)), "=", kv.modRev))
			if obj, ok := s.decode(kv); ok {
				found[d] = obj.Message
			}
		}
		if err := registry.CheckDependencies(k, m, found); err != nil {
			return 0, err
		}
		cur, exists := kvOf(0)
		switch {
		case create && exists:
			return 0, fmt.Errorf("%s: %w", k, registry.ErrAlreadyExists)
		case !create && !exists:
			return 0, fmt.Errorf("%s: %w", k, registry.ErrNotFound)
		case exists:
			if old, ok := s.decodeQuiet(cur); ok {
				if err := registry.CheckUpdate(old.Message, m); err != nil {
					return 0, err
				}
			}
			guards = append(guards, clientv3.Compare(clientv3.ModRevision(key), "=", cur.modRev))
		default:
			guards = append(guards, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
		}
		put, err := s.client.Txn(ctx).If(guards...).Then(clientv3.OpPut(key, string(data))).Commit()
		if err != nil {
			return 0, fmt.Errorf("registry/etcd: %s %s: %w", op, k, err)
		}
		if put.Succeeded {
			return put.Header.Revision, nil
		}
		// Something we read changed before the write: look again.
	}
	return 0, fmt.Errorf("registry/etcd: %s %s: gave up after %d attempts: it or what it depends on keeps changing", op, k, schemaMaxAttempts)
}

// Delete implements registry.Writer.
func (s *Store) Delete(ctx context.Context, k registry.Key) (int64, error) {
	if err := registry.ValidateKey(k); err != nil {
		return 0, err
	}
	if k.Kind == registry.KindGroup {
		_, rev, err := s.deleteGroup(ctx, k.Name, registry.DeleteGroupOptions{})
		return rev, err
	}
	resp, err := s.client.Delete(ctx, s.key(k))
	if err != nil {
		return 0, fmt.Errorf("registry/etcd: delete %s: %w", k, err)
	}
	if resp.Deleted == 0 {
		return 0, fmt.Errorf("%s: %w", k, registry.ErrNotFound)
	}
	return resp.Header.Revision, nil
}

// DeleteGroup implements registry.GroupDeleter. A forced delete removes the
// group and every key under its stream and measure prefixes in one
// transaction, guarded so that it fails (and is retried) if a member was
// created or changed after the members were listed.
func (s *Store) DeleteGroup(ctx context.Context, name string, opts registry.DeleteGroupOptions) (*databasev1.SchemaInfo, error) {
	info, _, err := s.deleteGroup(ctx, name, opts)
	return info, err
}

func (s *Store) deleteGroup(ctx context.Context, name string, opts registry.DeleteGroupOptions) (*databasev1.SchemaInfo, int64, error) {
	if opts.DataOnly {
		return nil, 0, fmt.Errorf("group %q: data_only delete: %w", name, registry.ErrUnimplemented)
	}
	gk := registry.GroupKey(name)
	if err := registry.ValidateKey(gk); err != nil {
		return nil, 0, err
	}
	gkey := s.key(gk)
	prefixes := make([]string, len(registry.MemberKinds))
	for i, kind := range registry.MemberKinds {
		prefixes[i] = s.prefix + codec.MembersPrefix(kind, name)
	}
	for range schemaMaxAttempts {
		// One read transaction: the group and its members at one revision.
		reads := []clientv3.Op{clientv3.OpGet(gkey)}
		for _, p := range prefixes {
			reads = append(reads, clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithKeysOnly()))
		}
		resp, err := s.client.Txn(ctx).Then(reads...).Commit()
		if err != nil {
			return nil, 0, fmt.Errorf("registry/etcd: delete group %q: %w", name, err)
		}
		gkvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(gkvs) == 0 {
			return nil, 0, fmt.Errorf("%s: %w", gk, registry.ErrNotFound)
		}
		var members []registry.Key
		for _, r := range resp.Responses[1:] {
			for _, kv := range r.GetResponseRange().GetKvs() {
				if mk, err := codec.Parse(strings.TrimPrefix(string(kv.Key), s.prefix)); err == nil {
					members = append(members, mk)
				}
			}
		}
		info := registry.SchemaInfo(members)
		if opts.DryRun {
			return info, 0, nil
		}
		if !opts.Force && len(members) > 0 {
			return nil, 0, registry.NonEmptyGroupError(name, info)
		}
		read := resp.Header.Revision
		// Guarded: no member was created or changed after the read.
		guards := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(gkey), "=", gkvs[0].ModRevision)}
		deletes := make([]clientv3.Op, 0, len(prefixes)+1)
		for _, p := range prefixes {
			guards = append(guards, clientv3.Compare(clientv3.ModRevision(p), "<", read+1).WithPrefix())
			deletes = append(deletes, clientv3.OpDelete(p, clientv3.WithPrefix()))
		}
		deletes = append(deletes, clientv3.OpDelete(gkey))
		del, err := s.client.Txn(ctx).If(guards...).Then(deletes...).Commit()
		if err != nil {
			return nil, 0, fmt.Errorf("registry/etcd: delete group %q: %w", name, err)
		}
		if del.Succeeded {
			return info, del.Header.Revision, nil
		}
	}
	return nil, 0, fmt.Errorf("registry/etcd: delete group %q: gave up after %d attempts: it keeps changing", name, schemaMaxAttempts)
}
