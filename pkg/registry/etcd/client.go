package etcd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/banyand-io/banyand/pkg/tlsutil"
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
	// TLSCAFile, when set, makes the client speak TLS and verify etcd
	// with these CAs. TLSCertFile and TLSKeyFile are a client
	// certificate for etcd's --client-cert-auth; they imply TLS (with the
	// system CAs when TLSCAFile is empty) and are re-read when renewed.
	TLSCAFile, TLSCertFile, TLSKeyFile string
	// Username and PasswordFile log in to etcd's own authentication.
	Username, PasswordFile string
}

// DefaultEndpoint is etcd's own default client address.
const DefaultEndpoint = "127.0.0.1:2379"

// RegisterFlags binds --etcd-endpoints and --namespace.
func (c *ClientConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.Endpoints, "etcd-endpoints", []string{DefaultEndpoint}, "comma-separated etcd client endpoints holding the schema and node registries")
	fs.StringVar(&c.Namespace, "namespace", DefaultNamespace, "key prefix in etcd, so several banyand clusters can share one etcd")
	fs.DurationVar(&c.DialTimeout, "etcd-dial-timeout", 5*time.Second, "how long to wait for the first etcd connection")
	fs.StringVar(&c.TLSCAFile, "etcd-tls-ca-file", "", "PEM CA certificates to verify etcd with; setting it connects to etcd over TLS")
	fs.StringVar(&c.TLSCertFile, "etcd-tls-cert-file", "", "PEM client certificate for etcd (--client-cert-auth); re-read when renewed")
	fs.StringVar(&c.TLSKeyFile, "etcd-tls-key-file", "", "PEM private key of --etcd-tls-cert-file")
	fs.StringVar(&c.Username, "etcd-username", "", "etcd user, when etcd authentication is enabled")
	fs.StringVar(&c.PasswordFile, "etcd-password-file", "", "file holding the password of --etcd-username")
}

// tlsEnabled reports whether the client speaks TLS.
func (c *ClientConfig) tlsEnabled() bool {
	return c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != ""
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
	if c.TLSCAFile != "" {
		if _, err := tlsutil.LoadCAPool(c.TLSCAFile); err != nil {
			errs = append(errs, fmt.Errorf("--etcd-tls-ca-file: %w", err))
		}
	}
	switch {
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		errs = append(errs, errors.New("--etcd-tls-cert-file and --etcd-tls-key-file: set both or neither"))
	case c.TLSCertFile != "":
		if _, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile}, nil); err != nil {
			errs = append(errs, fmt.Errorf("--etcd-tls-cert-file/--etcd-tls-key-file: %w", err))
		}
	}
	if (c.Username == "") != (c.PasswordFile == "") {
		errs = append(errs, errors.New("--etcd-username and --etcd-password-file: set both or neither"))
	} else if c.PasswordFile != "" {
		if _, err := c.password(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *ClientConfig) password() (string, error) {
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("--etcd-password-file: %w", err)
	}
	p := strings.TrimRight(string(b), "\r\n")
	if p == "" {
		return "", fmt.Errorf("--etcd-password-file %s: empty", c.PasswordFile)
	}
	return p, nil
}

// tlsConfig is the client's TLS configuration; nil for plaintext.
func (c *ClientConfig) tlsConfig(logger *slog.Logger) (*tls.Config, error) {
	if !c.tlsEnabled() {
		return nil, nil
	}
	var err error
	var cfg tls.Config
	cfg.MinVersion = tls.VersionTLS12
	if c.TLSCAFile != "" {
		if cfg.RootCAs, err = tlsutil.LoadCAPool(c.TLSCAFile); err != nil {
			return nil, fmt.Errorf("--etcd-tls-ca-file: %w", err)
		}
	}
	if c.TLSCertFile != "" || c.TLSKeyFile != "" {
		r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile},
			logger.With("tls", "etcd-client"))
		if err != nil {
			return nil, fmt.Errorf("--etcd-tls-cert-file/--etcd-tls-key-file: %w", err)
		}
		cfg.GetClientCertificate = r.GetClientCertificate
	}
	return &cfg, nil
}

// NewClient creates an etcd client. It does not wait for a connection:
// the registries retry until etcd answers; except with a Username, where
// the client logs in first and fails when etcd refuses the password or is
// not reachable within DialTimeout.
func NewClient(cfg ClientConfig) (*clientv3.Client, error) {
	return NewClientWithLogger(cfg, nil)
}

// NewClientWithLogger is NewClient logging to logger (renewed client
// certificates); a nil logger discards logs.
func NewClientWithLogger(cfg ClientConfig, logger *slog.Logger) (*clientv3.Client, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tlsCfg, err := cfg.tlsConfig(logger)
	if err != nil {
		return nil, err
	}
	var password string
	if cfg.PasswordFile != "" {
		if password, err = cfg.password(); err != nil {
			return nil, err
		}
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      zap.NewNop(),
		TLS:         tlsCfg,
		Username:    cfg.Username,
		Password:    password,
		// Keepalive notices a dead etcd connection within seconds.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	return c, nil
}
