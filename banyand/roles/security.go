package roles

import (
	"context"

	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/run"
)

// etcdClientComponent closes the etcd client last. At start it checks
// that etcd and this node accept each other's TLS certificates, so a
// wrong CA or client certificate fails the start with a reason instead of
// registry calls that only time out.
func etcdClientComponent(cfg etcd.ClientConfig, closeClient func() error) run.Component {
	return &funcComponent{
		name: "etcd-client",
		start: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
			defer cancel()
			return etcd.CheckTLS(ctx, cfg)
		},
		stop: func(context.Context) error { return closeClient() },
	}
}
