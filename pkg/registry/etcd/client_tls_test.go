package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/registry/registrytest"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

// tlsEtcd is an embedded etcd that serves TLS only and requires client
// certificates of its CA.
type tlsEtcd struct {
	srv               *etcdtest.Server
	ca                *tlstest.CA
	caFile, cert, key string
	dir               string
}

func startTLSEtcd(t *testing.T) *tlsEtcd {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "etcd CA")
	e := &tlsEtcd{ca: ca, dir: dir, caFile: ca.WriteCA(dir, "ca.crt")}
	srvCert, srvKey := ca.IssueFiles(dir, "etcd-server")
	e.cert, e.key = ca.IssueFiles(dir, "banyand")
	e.srv = etcdtest.StartWith(t, etcdtest.Options{TLS: &etcdtest.TLSOptions{
		CertFile: srvCert, KeyFile: srvKey, CAFile: e.caFile, ClientCertAuth: true,
		Client: &tls.Config{MinVersion: tls.VersionTLS12},
	}})
	return e
}

func (e *tlsEtcd) config(endpoint string) ClientConfig {
	return ClientConfig{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Namespace: DefaultNamespace,
		TLSCAFile: e.caFile, TLSCertFile: e.cert, TLSKeyFile: e.key}
}

// roundTrip writes a group through the schema registry and reads it back.
func roundTrip(t *testing.T, cfg ClientConfig, timeout time.Duration) error {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cli, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s := New(Config{Namespace: cfg.Namespace}, cli, nil)
	if _, err := s.Create(ctx, registrytest.NewGroup("tls", commonv1.Catalog_CATALOG_STREAM)); err != nil {
		return err
	}
	_, err = s.Get(ctx, registry.GroupKey("tls"))
	return err
}

func TestClientTLS(t *testing.T) {
	e := startTLSEtcd(t)

	t.Run("client with CA and certificate", func(t *testing.T) {
		for _, ep := range []string{e.srv.Endpoint(), e.srv.URL()} {
			cfg := e.config(ep)
			cfg.Namespace = "ns-" + strings.ReplaceAll(strings.ReplaceAll(ep, ":", ""), "/", "")
			if err := roundTrip(t, cfg, 30*time.Second); err != nil {
				t.Fatalf("endpoint %s: %v", ep, err)
			}
		}
	})
	t.Run("CheckTLS accepts", func(t *testing.T) {
		if err := CheckTLS(context.Background(), e.config(e.srv.URL())); err != nil {
			t.Fatal(err)
		}
	})
	// A refused client's registry calls only time out; CheckTLS, which the
	// roles run at start, says why.
	refused := func(t *testing.T, cfg ClientConfig, want string) {
		t.Helper()
		if err := roundTrip(t, cfg, time.Second); err == nil {
			t.Fatal("registry round trip succeeded")
		}
		err := CheckTLS(context.Background(), cfg)
		if !errors.Is(err, ErrTLSRefused) || !strings.Contains(err.Error(), want) {
			t.Fatalf("CheckTLS: %v, want ErrTLSRefused containing %q", err, want)
		}
	}
	t.Run("plaintext client refused", func(t *testing.T) {
		cfg := e.config(e.srv.Endpoint())
		cfg.TLSCAFile, cfg.TLSCertFile, cfg.TLSKeyFile = "", "", ""
		if err := roundTrip(t, cfg, time.Second); err == nil {
			t.Fatal("registry round trip succeeded")
		}
	})
	t.Run("client without the CA refused", func(t *testing.T) {
		other := tlstest.NewCA(t, "other CA")
		cfg := e.config(e.srv.Endpoint())
		cfg.TLSCAFile = other.WriteCA(e.dir, "other-ca.crt")
		refused(t, cfg, "certificate signed by unknown authority")
	})
	t.Run("client without a certificate refused", func(t *testing.T) {
		cfg := e.config(e.srv.Endpoint())
		cfg.TLSCertFile, cfg.TLSKeyFile = "", ""
		refused(t, cfg, "remote error: tls")
	})
	t.Run("unreachable endpoint is not a TLS error", func(t *testing.T) {
		cfg := e.config("127.0.0.1:1")
		if err := CheckTLS(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	})
}

func TestClientConfigValidateTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "CA")
	caFile := ca.WriteCA(dir, "ca.crt")
	cert, key := ca.IssueFiles(dir, "c")
	_, otherKey := ca.IssueFiles(dir, "d")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	base := ClientConfig{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: time.Second, Namespace: "ns"}
	for _, tc := range []struct {
		name string
		edit func(*ClientConfig)
		want string // "" means valid
	}{
		{"all set", func(c *ClientConfig) { c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile = caFile, cert, key }, ""},
		{"CA only", func(c *ClientConfig) { c.TLSCAFile = caFile }, ""},
		{"missing CA", func(c *ClientConfig) { c.TLSCAFile = filepath.Join(dir, "nope") }, "--etcd-tls-ca-file"},
		{"CA not PEM", func(c *ClientConfig) { c.TLSCAFile = empty }, "no PEM certificate"},
		{"cert without key", func(c *ClientConfig) { c.TLSCertFile = cert }, "set both or neither"},
		{"mismatched pair", func(c *ClientConfig) { c.TLSCertFile, c.TLSKeyFile = cert, otherKey }, "--etcd-tls-cert-file/--etcd-tls-key-file"},
		{"user without password", func(c *ClientConfig) { c.Username = "root" }, "--etcd-username and --etcd-password-file"},
		{"empty password file", func(c *ClientConfig) { c.Username, c.PasswordFile = "root", empty }, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
