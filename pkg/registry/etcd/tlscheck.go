package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
)

// ErrTLSRefused is returned by CheckTLS when etcd and this client do not
// accept each other's certificates.
var ErrTLSRefused = errors.New("TLS handshake with etcd failed")

// CheckTLS shakes hands with each endpoint, for a clear error at start
// where the etcd client would only time out: a server certificate not
// signed by --etcd-tls-ca-file, or a client certificate etcd refuses. It
// returns nil as soon as one endpoint accepts, and also when none could
// be reached at all (etcd may come later; the registries retry). It does
// nothing for a plaintext configuration.
func CheckTLS(ctx context.Context, cfg ClientConfig) error {
	tlsCfg, err := cfg.tlsConfig(slog.New(slog.DiscardHandler))
	if err != nil || tlsCfg == nil {
		return err
	}
	var errs []error
	for _, ep := range cfg.Endpoints {
		host := endpointHost(ep)
		err := handshake(ctx, host, tlsCfg)
		if err == nil {
			return nil
		}
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			continue // not reachable: not a TLS problem
		}
		errs = append(errs, fmt.Errorf("%s: %w", host, err))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w (check --etcd-tls-ca-file, --etcd-tls-cert-file, --etcd-tls-key-file): %w",
		ErrTLSRefused, errors.Join(errs...))
}

// handshake completes a TLS handshake with addr. It offers TLS 1.2 first,
// where a refused client certificate fails the handshake itself (in 1.3
// the refusal only arrives with the first read), and 1.3 when the server
// will not speak 1.2.
func handshake(ctx context.Context, addr string, cfg *tls.Config) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	try := func(maxVersion uint16) error {
		c := cfg.Clone()
		c.MaxVersion = maxVersion
		d := tls.Dialer{Config: c}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	err = try(tls.VersionTLS12)
	if err != nil && strings.Contains(err.Error(), "protocol version") {
		err = try(tls.VersionTLS13)
	}
	return err
}

// endpointHost is an endpoint's host:port (endpoints may be URLs).
func endpointHost(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		return u.Host
	}
	return ep
}
