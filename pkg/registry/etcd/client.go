package etcd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ClientConfig says how to reach etcd. Roles create their client through
// NewClient so that etcd stays behind this package.
type ClientConfig struct {
	// Endpoints are etcd client URLs or host:port pairs.
	Endpoints []string
	// DialTimeout bounds establishing the first connection.
	DialTimeout time.Duration
	// Namespace prefixes every key of both registries.
	Namespace string
}

// DefaultEndpoint is etcd's own default client address.
const DefaultEndpoint = "127.0.0.1:2379"

// RegisterFlags binds --etcd-endpoints and --namespace.
func (c *ClientConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.Endpoints, "etcd-endpoints", []string{DefaultEndpoint}, "comma-separated etcd client endpoints holding the schema and node registries")
	fs.StringVar(&c.Namespace, "namespace", DefaultNamespace, "key prefix in etcd, so several banyand clusters can share one etcd")
	fs.DurationVar(&c.DialTimeout, "etcd-dial-timeout", 5*time.Second, "how long to wait for the first etcd connection")
}

// Validate reports settings that cannot work.
func (c *ClientConfig) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("--etcd-endpoints: at least one endpoint is required"))
	}
	for _, e := range c.Endpoints {
		if strings.TrimSpace(e) == "" {
			errs = append(errs, errors.New("--etcd-endpoints: empty endpoint"))
		}
	}
	if c.Namespace == "" || strings.HasSuffix(c.Namespace, "/") || strings.ContainsRune(c.Namespace, 0) {
		errs = append(errs, fmt.Errorf("--namespace %q: must be non-empty and not end in '/'", c.Namespace))
	}
	if c.DialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-dial-timeout %s: must be positive", c.DialTimeout))
	}
	return errors.Join(errs...)
}

// NewClient creates an etcd client. It does not wait for a connection:
// the registries retry until etcd answers.
func NewClient(cfg ClientConfig) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      zap.NewNop(),
		// Keepalive notices a dead etcd connection within seconds.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	return c, nil
}
