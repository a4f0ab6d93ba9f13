package tlsutil_test

import (
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/tlsutil"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

// tlsServer accepts TLS connections with cfg and completes each handshake.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = lis.Close(); <-done })
	return lis.Addr().String()
}

// servedSerial opens a new connection and returns the server's serial.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// replace writes a file and moves its mtime forward, so the change is seen
// even on a file system with coarse timestamps.
func replace(t *testing.T, path string, data []byte, bump time.Duration) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(bump)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestReloaderPicksUpRenewedPair(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	first := ca.Issue("server")
	certFile, keyFile := first.Write(t, dir, "server")
	r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: certFile, KeyFile: keyFile, CheckInterval: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsServer(t, tlsutil.ServerConfig(r, nil))
	if got := servedSerial(t, addr, ca.Pool()); got.Cmp(first.Serial) != 0 {
		t.Fatalf("serves serial %s, want %s", got, first.Serial)
	}

	second := ca.Issue("server")
	replace(t, keyFile, second.KeyPEM, time.Second)
	replace(t, certFile, second.CertPEM, time.Second)
	poll.Until(t, "a new connection sees the renewed certificate", func() bool {
		return servedSerial(t, addr, ca.Pool()).Cmp(second.Serial) == 0
	})
	if s := r.Stats(); s.Reloads != 1 || s.Failures != 0 {
		t.Fatalf("stats %+v, want 1 reload and no failure", s)
	}
}

func TestReloaderKeepsOldPairWhenRenewalIsBroken(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	first := ca.Issue("server")
	certFile, keyFile := first.Write(t, dir, "server")
	r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: certFile, KeyFile: keyFile, CheckInterval: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsServer(t, tlsutil.ServerConfig(r, nil))

	// A new certificate whose key has not been written yet: a mismatched pair.
	second := ca.Issue("server")
	replace(t, certFile, second.CertPEM, time.Second)
	poll.Until(t, "the mismatched pair is refused", func() bool {
		_ = servedSerial(t, addr, ca.Pool())
		return r.Stats().Failures == 1
	})
	if got := servedSerial(t, addr, ca.Pool()); got.Cmp(first.Serial) != 0 {
		t.Fatalf("after a broken renewal serves serial %s, want the old %s", got, first.Serial)
	}

	// Garbage in the key file is refused the same way.
	replace(t, keyFile, []byte("not a key"), 2*time.Second)
	poll.Until(t, "the garbage key is refused", func() bool {
		_ = servedSerial(t, addr, ca.Pool())
		return r.Stats().Failures == 2
	})
	if got := servedSerial(t, addr, ca.Pool()); got.Cmp(first.Serial) != 0 {
		t.Fatalf("after a garbage key serves serial %s, want the old %s", got, first.Serial)
	}

	// The key arrives: the renewal completes.
	replace(t, keyFile, second.KeyPEM, 3*time.Second)
	poll.Until(t, "the completed pair is served", func() bool {
		return servedSerial(t, addr, ca.Pool()).Cmp(second.Serial) == 0
	})
}

func TestNewReloaderRefusesBadPairs(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	certFile, keyFile := ca.IssueFiles(dir, "a")
	otherCert, otherKey := ca.IssueFiles(dir, "b")
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"missing cert", filepath.Join(dir, "none.crt"), keyFile, "no such file"},
		{"missing key", certFile, filepath.Join(dir, "none.key"), "no such file"},
		{"mismatched", certFile, otherKey, "does not match"},
		{"garbage cert", garbage, keyFile, "failed to find any PEM data"},
		{"no key file given", otherCert, "", "both a certificate file and a key file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: tc.cert, KeyFile: tc.key}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMutualTLSWithReloaders(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cluster CA")
	other := tlstest.NewCA(t, "other CA")
	sc, sk := ca.IssueFiles(dir, "server")
	srv, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: sc, KeyFile: sk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsServer(t, tlsutil.ServerConfig(srv, ca.Pool()))
	handshake := func(client *tlsutil.Reloader) error {
		c, err := tls.Dial("tcp", addr, tlsutil.ClientConfig(ca.Pool(), client, ""))
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate on the first read.
		_, err = c.Read(make([]byte, 1))
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			return err
		}
		return nil
	}
	reloader := func(ca *tlstest.CA, name string) *tlsutil.Reloader {
		c, k := ca.IssueFiles(dir, name)
		r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c, KeyFile: k}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if err := handshake(reloader(ca, "client")); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	}
	if err := handshake(nil); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("client without certificate: err %v, want certificate required", err)
	}
	if err := handshake(reloader(other, "stranger")); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Fatalf("client with another CA's certificate: err %v, want unknown certificate authority", err)
	}
}
