// Package security holds the TLS and authentication settings of the roles:
// the client API's (TLS, bearer tokens and basic auth), the cluster
// protocol's on both ends, and the metrics of their certificates,
// handshakes and refused calls.
package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/pkg/auth"
	"github.com/banyand-io/banyand/pkg/queue/sub"
	"github.com/banyand-io/banyand/pkg/tlsutil"
)

// ClientSecurity is the client API's TLS and authentication (liaison and
// standalone).
type ClientSecurity struct {
	// TLS serves the client API over TLS with CertFile and KeyFile, which
	// are re-read when renewed in place.
	TLS               bool
	CertFile, KeyFile string
	// AuthFile, when set, requires credentials on every call but health
	// checks (see pkg/auth for its layout); it is re-read when it changes.
	AuthFile string
}

func (c *ClientSecurity) RegisterFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.TLS, "tls", false, "serve the client API over TLS with --tls-cert-file and --tls-key-file")
	fs.StringVar(&c.CertFile, "tls-cert-file", "", "PEM certificate (chain) of the client API; renewed files are picked up without restart")
	fs.StringVar(&c.KeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&c.AuthFile, "auth-file", "", "YAML file of bearer tokens and basic-auth users with scopes; when set, every client API call but health checks needs credentials (reloaded on change)")
}

func (c *ClientSecurity) Validate() error {
	var errs []error
	switch {
	case c.TLS && (c.CertFile == "" || c.KeyFile == ""):
		errs = append(errs, errors.New("--tls needs both --tls-cert-file and --tls-key-file"))
	case c.TLS:
		if _, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c.CertFile, KeyFile: c.KeyFile}, nil); err != nil {
			errs = append(errs, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err))
		}
	case c.CertFile != "" || c.KeyFile != "":
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file are set but --tls is not: the client API would be served in plaintext"))
	}
	if c.AuthFile != "" {
		if err := auth.Check(c.AuthFile); err != nil {
			errs = append(errs, fmt.Errorf("--auth-file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ClientAPI is the client API's security as the servers apply it.
type ClientAPI struct {
	// GRPC are the gRPC server's TLS credentials and auth interceptors.
	GRPC []grpc.ServerOption
	// HTTP serves the HTTP port (its /api among the rest) with the same
	// certificate as the gRPC server; nil without --tls.
	HTTP *tls.Config
	// Loopback is how the role's HTTP gateway dials its own gRPC server:
	// it trusts exactly the certificate that server serves (the same
	// reloader's current one), as no CA is configured for it; nil without
	// --tls.
	Loopback *tls.Config
}

// ServerOptions builds the client API's TLS credentials and auth
// interceptors, with their metrics.
func (c *ClientSecurity) ServerOptions(logger *slog.Logger, sec *Metrics) (ClientAPI, error) {
	logger.Info("client API security", "tls", c.TLS, "auth_file", c.AuthFile)
	var api ClientAPI
	if c.TLS {
		r, err := newCertReloader(c.CertFile, c.KeyFile, "client-api", logger, sec)
		if err != nil {
			return ClientAPI{}, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		failures := newHandshakeFailures("client-api", logger, sec)
		api.GRPC = append(api.GRPC, grpc.Creds(tlsutil.ServerCredentials(tlsutil.ServerConfig(r, nil), failures.Report)))
		api.HTTP = tlsutil.ServerConfig(r, nil)
		api.HTTP.NextProtos = []string{"h2", "http/1.1"}
		api.Loopback = tlsutil.PinnedClientConfig(r)
	}
	if c.AuthFile != "" {
		if !c.TLS {
			logger.Warn("--auth-file without --tls: credentials cross the network in plaintext")
		}
		a, err := auth.New(auth.Config{File: c.AuthFile, Policy: clientAPIPolicy}, logger.With("component", "auth"))
		if err != nil {
			return ClientAPI{}, fmt.Errorf("--auth-file: %w", err)
		}
		sec.SetAuth(a.Stats)
		// After the metrics interceptors (the caller appends these last),
		// so refused calls are counted with their codes.
		api.GRPC = append(api.GRPC, grpc.ChainUnaryInterceptor(a.UnaryInterceptor()), grpc.ChainStreamInterceptor(a.StreamInterceptor()))
	}
	return api, nil
}

// clientAPIPolicy is the scope each client API method needs. Health
// checks are open so load balancers and orchestrators need no secret.
func clientAPIPolicy(method string) (auth.Scope, bool) {
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	switch {
	case service == "grpc.health.v1.Health":
		return "", true
	case strings.HasPrefix(service, "grpc.reflection."):
		return auth.ScopeRead, false
	case service == "banyandb.stream.v1.StreamService" || service == "banyandb.measure.v1.MeasureService" ||
		service == "banyandb.trace.v1.TraceService":
		if name == "Write" {
			return auth.ScopeWrite, false
		}
		return auth.ScopeRead, false
	case service == "banyandb.property.v1.PropertyService":
		if name == "Apply" || name == "Delete" {
			return auth.ScopeWrite, false
		}
		return auth.ScopeRead, false
	case strings.HasPrefix(service, "banyandb.database.v1."):
		switch name {
		case "Get", "List", "Exist":
			return auth.ScopeRead, false
		}
	}
	// Schema changes, and anything not listed: the schema scope.
	return auth.ScopeSchema, false
}

// ClusterServerTLS is a data node's side of the cluster protocol's TLS.
type ClusterServerTLS struct {
	// CertFile and KeyFile serve TLS to liaisons (re-read when renewed).
	CertFile, KeyFile string
	// CAFile, when set, requires liaisons to present a certificate signed
	// by one of its CAs (mutual TLS).
	CAFile string
}

func (c *ClusterServerTLS) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.CertFile, "cluster-tls-cert-file", "", "PEM certificate this data node serves the cluster protocol with; setting it enables TLS (renewed files are picked up without restart)")
	fs.StringVar(&c.KeyFile, "cluster-tls-key-file", "", "PEM private key of --cluster-tls-cert-file")
	fs.StringVar(&c.CAFile, "cluster-tls-ca-file", "", "PEM CAs of liaison client certificates; when set, liaisons without such a certificate are refused (mutual TLS)")
}

func (c *ClusterServerTLS) Validate() error {
	switch {
	case c.CertFile == "" && c.KeyFile == "":
		if c.CAFile != "" {
			return errors.New("--cluster-tls-ca-file needs --cluster-tls-cert-file and --cluster-tls-key-file")
		}
		return nil
	case c.CertFile == "" || c.KeyFile == "":
		return errors.New("--cluster-tls-cert-file and --cluster-tls-key-file: set both or neither")
	}
	var errs []error
	if _, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c.CertFile, KeyFile: c.KeyFile}, nil); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-tls-cert-file/--cluster-tls-key-file: %w", err))
	}
	if c.CAFile != "" {
		if _, err := tlsutil.LoadCAPool(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-tls-ca-file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Apply sets the subscriber's TLS configuration, unless it has one
// already (tests) or TLS is off.
func (c *ClusterServerTLS) Apply(cfg *sub.Config, logger *slog.Logger, sec *Metrics) error {
	if c.CertFile == "" || cfg.TLS != nil {
		return nil
	}
	r, err := newCertReloader(c.CertFile, c.KeyFile, "cluster-server", logger, sec)
	if err != nil {
		return fmt.Errorf("--cluster-tls-cert-file/--cluster-tls-key-file: %w", err)
	}
	var pool *x509.CertPool
	if c.CAFile != "" {
		if pool, err = tlsutil.LoadCAPool(c.CAFile); err != nil {
			return fmt.Errorf("--cluster-tls-ca-file: %w", err)
		}
	}
	cfg.TLS = tlsutil.ServerConfig(r, pool)
	cfg.OnHandshakeFailure = newHandshakeFailures("cluster-server", logger, sec).Report
	return nil
}

// ClusterClientTLS is a liaison's side of the cluster protocol's TLS.
type ClusterClientTLS struct {
	// CAFile verifies data nodes; CertFile and KeyFile are the liaison's
	// client certificate. Any of them enables TLS.
	CAFile, CertFile, KeyFile string
	// ServerName, when set, is the name data node certificates must hold,
	// instead of the host each node registered.
	ServerName string
}

func (c *ClusterClientTLS) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.CAFile, "cluster-tls-ca-file", "", "PEM CAs to verify data nodes with; setting it (or a client certificate) connects to data nodes over TLS")
	fs.StringVar(&c.CertFile, "cluster-tls-cert-file", "", "PEM client certificate presented to data nodes that require one (renewed files are picked up without restart)")
	fs.StringVar(&c.KeyFile, "cluster-tls-key-file", "", "PEM private key of --cluster-tls-cert-file")
	fs.StringVar(&c.ServerName, "cluster-tls-server-name", "", "name every data node certificate must hold (default: the host each node registered)")
}

func (c *ClusterClientTLS) enabled() bool {
	return c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
}

func (c *ClusterClientTLS) Validate() error {
	var errs []error
	if c.CAFile != "" {
		if _, err := tlsutil.LoadCAPool(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-tls-ca-file: %w", err))
		}
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		errs = append(errs, errors.New("--cluster-tls-cert-file and --cluster-tls-key-file: set both or neither"))
	case c.CertFile != "":
		if _, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c.CertFile, KeyFile: c.KeyFile}, nil); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-tls-cert-file/--cluster-tls-key-file: %w", err))
		}
	}
	if c.ServerName != "" && !c.enabled() {
		errs = append(errs, errors.New("--cluster-tls-server-name needs --cluster-tls-ca-file"))
	}
	return errors.Join(errs...)
}

// Config is the publisher's TLS configuration; nil for plaintext.
func (c *ClusterClientTLS) Config(logger *slog.Logger, sec *Metrics) (*tls.Config, error) {
	if !c.enabled() {
		return nil, nil
	}
	var pool *x509.CertPool
	var err error
	if c.CAFile != "" {
		if pool, err = tlsutil.LoadCAPool(c.CAFile); err != nil {
			return nil, fmt.Errorf("--cluster-tls-ca-file: %w", err)
		}
	}
	var r *tlsutil.Reloader
	if c.CertFile != "" {
		if r, err = newCertReloader(c.CertFile, c.KeyFile, "cluster-client", logger, sec); err != nil {
			return nil, fmt.Errorf("--cluster-tls-cert-file/--cluster-tls-key-file: %w", err)
		}
	}
	return tlsutil.ClientConfig(pool, r, c.ServerName), nil
}

// newHandshakeFailures counts and logs a server's failed TLS handshakes.
func newHandshakeFailures(use string, logger *slog.Logger, sec *Metrics) *tlsutil.HandshakeFailures {
	h := tlsutil.NewHandshakeFailures(logger.With("tls", use), 0)
	sec.AddHandshakes(use, h.Count)
	return h
}

// newCertReloader loads a pair that is re-read when renewed and exports
// its expiry and reloads, labelled with use.
func newCertReloader(certFile, keyFile, use string, logger *slog.Logger, sec *Metrics) (*tlsutil.Reloader, error) {
	r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: certFile, KeyFile: keyFile}, logger.With("tls", use))
	if err != nil {
		return nil, err
	}
	sec.AddCert(use, r.Stats)
	return r, nil
}
