// Package etcdtest starts a real embedded etcd server on loopback for tests.
package etcdtest

import (
	"crypto/tls"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is an embedded single-member etcd. Stop and Restart let tests take
// it away and bring it back on the same data directory and client address.
type Server struct {
	t        testing.TB
	dir      string
	etcd     *embed.Etcd
	endpoint string
	peer     string
	opts     Options
}

// Options change how the server is started.
type Options struct {
	// TLS, when set, serves the client port over TLS only.
	TLS *TLSOptions
}

// TLSOptions are the server's PEM files, as etcd's --cert-file, --key-file
// and --trusted-ca-file.
type TLSOptions struct {
	CertFile, KeyFile, CAFile string
	// ClientCertAuth requires clients to present a certificate of CAFile.
	ClientCertAuth bool
	// Client is what Client() dials with.
	Client *tls.Config
}

// Start runs an embedded etcd on 127.0.0.1 with ports picked by the kernel
// and data in a temp dir; it is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), opts: opts}
	s.start("127.0.0.1:0", "127.0.0.1:0")
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start(clientHost, peerHost string) {
	s.t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = s.dir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Short ticks make the single member elect itself in ~0.1 s.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cu := url.URL{Scheme: "http", Host: clientHost}
	if o := s.opts.TLS; o != nil {
		cu.Scheme = "https"
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile: o.CertFile, KeyFile: o.KeyFile, TrustedCAFile: o.CAFile, ClientCertAuth: o.ClientCertAuth,
		}
	}
	pu := url.URL{Scheme: "http", Host: peerHost}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		s.t.Fatalf("etcdtest: start embedded etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		s.t.Fatal("etcdtest: embedded etcd not ready after 30s")
	}
	s.etcd = e
	s.endpoint = e.Clients[0].Addr().String()
	s.peer = e.Peers[0].Addr().String()
}

// Endpoint is the client address, host:port.
func (s *Server) Endpoint() string { return s.endpoint }

// URL is the client URL, https:// when the server serves TLS.
func (s *Server) URL() string {
	if s.opts.TLS != nil {
		return "https://" + s.endpoint
	}
	return "http://" + s.endpoint
}

// Client returns a client for the server, closed when the test ends. Close
// clients before the server (t.Cleanup runs in reverse), or Close waits.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		TLS:         s.clientTLS(),
	})
	if err != nil {
		s.t.Fatalf("etcdtest: client: %v", err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop stops the server; safe to call twice.
func (s *Server) Stop() {
	if s.etcd == nil {
		return
	}
	s.etcd.Close()
	s.etcd = nil
}

// Restart stops the server and starts it again on the same data directory
// and addresses, as an operator's restart would.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start(s.endpoint, s.peer)
}

func (s *Server) clientTLS() *tls.Config {
	if s.opts.TLS == nil {
		return nil
	}
	return s.opts.TLS.Client
}
