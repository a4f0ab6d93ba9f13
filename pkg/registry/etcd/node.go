package etcd

import (
	"context"

	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

// Defaults of NodeConfig.
const (
	DefaultNodeTTL      = 5 * time.Second
	defaultNodeRetryMin = 100 * time.Millisecond
	defaultNodeStop     = 2 * time.Second
)

// NodeConfig configures the etcd node registry: NodeRegistrar and
// NodeWatcher. Zero fields take the defaults.
type NodeConfig struct {
	// Namespace prefixes every key: a node lives at <Namespace>/nodes/<name>.
	// It must not end in '/'. Empty means DefaultNamespace, as for the
	// schema Store, so that both registries share one namespace.
	Namespace string
	// TTL of a registration's lease, in whole seconds: how long a node that
	// died without deregistering stays visible (plus etcd's expiry check,
	// about 0.5 s). Default 5 s.
	TTL time.Duration
	// RetryMin and RetryMax bound the backoff between attempts to
	// re-register or re-list after a failure. Defaults 100 ms and TTL/2.
	RetryMin, RetryMax time.Duration
	// StopTimeout bounds the deregistration of a stopping node. If it
	// passes, the node disappears when its lease expires instead. Default 2 s.
	StopTimeout time.Duration
}

// RegisterFlags binds the operator-facing settings to fs.
func (c *NodeConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&c.TTL, "node-lease-ttl", DefaultNodeTTL,
		"how long a data node that died without deregistering stays routable (whole seconds)")
}

// Validate reports a config that cannot work, after defaults are applied.
func (c NodeConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case strings.HasSuffix(c.Namespace, "/") || strings.ContainsRune(c.Namespace, 0):
		return fmt.Errorf("etcd node registry: namespace %q must not end in '/' or contain NUL", c.Namespace)
	case c.TTL < time.Second || c.TTL%time.Second != 0:
		return fmt.Errorf("etcd node registry: lease TTL %s must be a whole number of seconds, at least 1s", c.TTL)
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("etcd node registry: retry backoff %s..%s must be positive and ordered", c.RetryMin, c.RetryMax)
	case c.StopTimeout <= 0:
		return fmt.Errorf("etcd node registry: stop timeout %s must be positive", c.StopTimeout)
	}
	return nil
}

func (c NodeConfig) withDefaults() NodeConfig {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.TTL == 0 {
		c.TTL = DefaultNodeTTL
	}
	if c.RetryMin == 0 {
		c.RetryMin = defaultNodeRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(c.TTL/2, c.RetryMin)
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = defaultNodeStop
	}
	return c
}

// nodesPrefix is the prefix of every node key; it ends in '/' so that
// "<ns>/nodes/" never matches "<ns>/nodes-archive/...".
func (c NodeConfig) nodesPrefix() string { return c.Namespace + "/nodes/" }

func (c NodeConfig) nodeKey(name string) string { return c.nodesPrefix() + name }

// decodeNodeKV returns the node stored at kv, or why it is not one: bytes
// that are not a Node, a node that fails node.Validate, or a key whose last
// segment is not the node's name.
func decodeNodeKV(prefix string, kv *mvccpb.KeyValue) (*databasev1.Node, error) {
	n := &databasev1.Node{}
	if err := proto.Unmarshal(kv.Value, n); err != nil {
		return nil, fmt.Errorf("%w: %d bytes that are not a Node: %w", node.ErrInvalidNode, len(kv.Value), err)
	}
	if err := node.Validate(n); err != nil {
		return nil, err
	}
	if name := strings.TrimPrefix(string(kv.Key), prefix); name != n.GetMetadata().GetName() {
		return nil, fmt.Errorf("%w: key names %q, value names %q", node.ErrInvalidNode, name, n.GetMetadata().GetName())
	}
	return n, nil
}

// nodeBackoff is an exponential backoff with full jitter between min and max.
type nodeBackoff struct {
	min, max, cur time.Duration
}

func newNodeBackoff(lo, hi time.Duration) *nodeBackoff { return &nodeBackoff{min: lo, max: hi} }

func (b *nodeBackoff) reset() { b.cur = 0 }

// wait sleeps for the next backoff step; it returns false if ctx ended first.
func (b *nodeBackoff) wait(ctx context.Context) bool {
	b.cur = min(max(b.cur*2, b.min), b.max)
	d := b.min + rand.N(b.cur-b.min+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
