package roles

import (
	"context"
	"errors"
	"log/slog"
	"time"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

// registration keeps a role registered in etcd while it runs; it is
// stopped first, so liaisons stop routing to a data node before it drains
// and a liaison leaves the status pages as it stops.
type registration struct {
	what string // "data node" or "liaison", for the log
	// retryTaken, if positive: when another live registration holds the
	// name (a process that died at another address, until its lease
	// expires), wait this long and try again instead of stopping the role.
	// For liaisons, whose registration only feeds status pages; a data
	// node must not run unregistered under a name another node holds.
	retryTaken time.Duration
	// node builds the registration when the component serves: the
	// addresses it advertises are bound by then.
	node      func() *databasev1.Node
	registrar interface {
		Register(ctx context.Context, n *databasev1.Node) error
	}
	logger *slog.Logger
}

func (r *registration) Name() string { return "node-registration" }

func (r *registration) Serve(ctx context.Context) error {
	n := r.node()
	r.logger.Info("registering "+r.what, "node", n.GetMetadata().GetName(), "addr", n.GetGrpcAddress())
	for {
		// After ctx is done Register returns nil, or why the node could not
		// be deregistered (its lease then expires on its own).
		err := r.registrar.Register(ctx, n)
		if r.retryTaken <= 0 || !errors.Is(err, node.ErrNodeNameTaken) {
			return err
		}
		r.logger.Warn(r.what+" not registered: its name is taken; retrying", "error", err, "retry_in", r.retryTaken)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.retryTaken):
		}
	}
}

// liaisonRegistrationRetry is how long a liaison whose name is taken waits
// before trying again: about a default node lease.
const liaisonRegistrationRetry = 5 * time.Second
