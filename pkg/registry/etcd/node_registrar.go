package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

// NodeRegistrar keeps a node registered in etcd: its key holds the node
// under a lease that is kept alive while Register runs, so a node that dies
// without deregistering disappears when the lease expires (NodeConfig.TTL).
type NodeRegistrar struct {
	cfg NodeConfig
	cli *clientv3.Client
	log *slog.Logger

	registrations atomic.Int64
	renewals      atomic.Int64
	losses        atomic.Int64
}

var _ node.Registrar = (*NodeRegistrar)(nil)

// NodeRegistrarStats counts what a NodeRegistrar did since it was made.
type NodeRegistrarStats struct {
	// Registrations are successful writes of a node's key: one per
	// Register, plus one per re-registration after a lost lease.
	Registrations int64
	// Renewals are keep-alive responses received.
	Renewals int64
	// Losses are leases lost while registered: expired, revoked, or not
	// renewed for a whole TTL (etcd unreachable).
	Losses int64
}

// NewNodeRegistrar returns a registrar writing through cli; it does no I/O.
// A nil log means slog.Default().
func NewNodeRegistrar(cfg NodeConfig, cli *clientv3.Client, log *slog.Logger) (*NodeRegistrar, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cli == nil {
		return nil, errors.New("etcd node registrar: nil client")
	}
	if log == nil {
		log = slog.Default()
	}
	return &NodeRegistrar{cfg: cfg.withDefaults(), cli: cli, log: log.With("component", "node-registrar")}, nil
}

// Stats returns the registrar's counters.
func (r *NodeRegistrar) Stats() NodeRegistrarStats {
	return NodeRegistrarStats{
		Registrations: r.registrations.Load(),
		Renewals:      r.renewals.Load(),
		Losses:        r.losses.Load(),
	}
}

// Register implements node.Registrar. It writes n (CreatedAt set to now if
// empty) at <Namespace>/nodes/<name> under a fresh lease and keeps the lease
// alive until ctx is done, then revokes it, which deletes the key at once.
//
// A key already there is replaced if it is a stale registration of this
// node (same gRPC address, e.g. left by a crash) or holds no live node; one
// held by a live node at another address fails with node.ErrNodeNameTaken.
// When the lease is lost, Register grants a new one and writes the key again,
// retrying with backoff until ctx is done; etcd being unreachable is never
// returned as an error.
func (r *NodeRegistrar) Register(ctx context.Context, n *databasev1.Node) error {
	if err := node.Validate(n); err != nil {
		return err
	}
	n = proto.CloneOf(n)
	if n.CreatedAt == nil {
		n.CreatedAt = timestamppb.Now()
	}
	val, err := proto.Marshal(n)
	if err != nil {
		return fmt.Errorf("register node %q: marshal: %w", n.GetMetadata().GetName(), err)
	}
	name := n.GetMetadata().GetName()
	key := r.cfg.nodeKey(name)
	log := r.log.With("node", name, "key", key)
	bo := newNodeBackoff(r.cfg.RetryMin, r.cfg.RetryMax)
	// last is the latest lease we wrote the key under. After a loss it may
	// still be alive in etcd (we only stopped hearing from it), so a stop
	// revokes it even then rather than leave the key for a TTL.
	var last clientv3.LeaseID
	for {
		id, err := r.put(ctx, key, n, val)
		switch {
		case err == nil:
			last = id
			r.registrations.Add(1)
			log.Info("node registered", "lease", fmt.Sprintf("%x", int64(id)), "ttl", r.cfg.TTL)
			registered := time.Now()
			lost, lastRenewal := r.keepAlive(ctx, id)
			if !lost {
				return r.deregister(ctx, name, id)
			}
			r.losses.Add(1)
			log.Warn("node lease lost; registering again", "lease", fmt.Sprintf("%x", int64(id)),
				"since_last_renewal", time.Since(lastRenewal).Round(time.Millisecond))
			// A registration that held is retried at once, the node being
			// unroutable meanwhile; one that keeps failing backs off.
			if time.Since(registered) >= r.cfg.TTL {
				bo.reset()
			} else if !bo.wait(ctx) {
				return r.deregister(ctx, name, last)
			}
			continue
		case errors.Is(err, node.ErrNodeNameTaken):
			if last != 0 {
				r.revoke(ctx, last)
			}
			return err
		case ctx.Err() != nil:
			return r.deregister(ctx, name, last)
		}
		log.Warn("cannot register node; retrying", "err", err)
		if !bo.wait(ctx) {
			return r.deregister(ctx, name, last)
		}
	}
}

// put grants a lease and writes the node's key under it, replacing a stale
// registration. On error it revokes the lease it granted.
func (r *NodeRegistrar) put(ctx context.Context, key string, n *databasev1.Node, val []byte) (_ clientv3.LeaseID, err error) {
	lease, err := r.cli.Grant(ctx, int64(r.cfg.TTL.Seconds()))
	if err != nil {
		return 0, fmt.Errorf("grant lease: %w", err)
	}
	defer func() {
		if err != nil {
			r.revoke(ctx, lease.ID)
		}
	}()
	putOp := clientv3.OpPut(key, string(val), clientv3.WithLease(lease.ID))
	// Rounds: an absent key is created; a present one is checked, then
	// replaced if it has not changed since. A bounded number of rounds
	// keeps a flapping key from pinning us here; the caller retries.
	for range 4 {
		resp, err := r.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(putOp).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("create key: %w", err)
		}
		if resp.Succeeded {
			return lease.ID, nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			continue // deleted since the compare
		}
		cur := kvs[0]
		if err := r.checkReplaceable(cur.Value, cur.Lease, n); err != nil {
			return 0, err
		}
		resp, err = r.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", cur.ModRevision)).
			Then(putOp).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("replace key: %w", err)
		}
		if resp.Succeeded {
			r.log.Info("replaced stale node registration", "node", n.GetMetadata().GetName(),
				"old_lease", fmt.Sprintf("%x", cur.Lease))
			return lease.ID, nil
		}
	}
	return 0, fmt.Errorf("key %s kept changing under us", key)
}

// checkReplaceable says whether the value found at our key may be
// overwritten: yes if nobody keeps it alive (no lease), if it is not a valid
// node, or if it is this node's own stale registration (same address);
// otherwise another live node holds the name.
func (r *NodeRegistrar) checkReplaceable(val []byte, lease int64, n *databasev1.Node) error {
	if lease == 0 {
		return nil
	}
	cur := &databasev1.Node{}
	valid := proto.Unmarshal(val, cur) == nil && cur.GetGrpcAddress() != ""
	if !valid || cur.GetGrpcAddress() == n.GetGrpcAddress() {
		return nil
	}
	return fmt.Errorf("register node %q at %s: %w: it is registered at %s (lease %x, expires unless renewed within %s)",
		n.GetMetadata().GetName(), n.GetGrpcAddress(), node.ErrNodeNameTaken, cur.GetGrpcAddress(), lease, r.cfg.TTL)
}

// keepAlive renews the lease until ctx is done (lost false) or the lease is
// lost (true): revoked, expired, or not renewed for a whole TTL. It also
// returns when the lease was last renewed, for the log.
func (r *NodeRegistrar) keepAlive(ctx context.Context, id clientv3.LeaseID) (lost bool, lastRenewal time.Time) {
	lastRenewal = time.Now() // granted just now
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := r.cli.KeepAlive(kctx, id)
	if err != nil {
		return ctx.Err() == nil, lastRenewal
	}
	for {
		select {
		case <-ctx.Done():
			return false, lastRenewal
		case _, ok := <-ch:
			if !ok {
				return ctx.Err() == nil, lastRenewal
			}
			lastRenewal = time.Now()
			r.renewals.Add(1)
		}
	}
}

// deregister revokes the lease, deleting the key, within StopTimeout. A
// lease etcd no longer has is already deregistered; no lease, nothing to do.
func (r *NodeRegistrar) deregister(ctx context.Context, name string, id clientv3.LeaseID) error {
	if id == clientv3.NoLease {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StopTimeout)
	defer cancel()
	if _, err := r.cli.Revoke(dctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("deregister node %q: revoke lease %x: %w (its key expires with the lease within %s)",
			name, int64(id), err, r.cfg.TTL)
	}
	r.log.Info("node deregistered", "node", name)
	return nil
}

// revoke drops a lease we will not use, best effort: unused, it expires anyway.
func (r *NodeRegistrar) revoke(ctx context.Context, id clientv3.LeaseID) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StopTimeout)
	defer cancel()
	if _, err := r.cli.Revoke(rctx, id); err != nil {
		r.log.Debug("cannot revoke unused lease", "lease", fmt.Sprintf("%x", int64(id)), "err", err)
	}
}
