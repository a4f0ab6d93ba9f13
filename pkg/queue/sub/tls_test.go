package sub_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

// testPKI is a throwaway CA with a server and a client certificate.
type testPKI struct {
	pool   *x509.CertPool
	server tls.Certificate
	client tls.Certificate
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "banyand test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{
		pool:   pool,
		server: leaf(2, "data-1", x509.ExtKeyUsageServerAuth),
		client: leaf(3, "liaison-1", x509.ExtKeyUsageClientAuth),
	}
}

func TestTLS(t *testing.T) {
	pki := newPKI(t)
	ts := startServer(t, sub.Config{TLS: &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		MinVersion:   tls.VersionTLS13,
	}}, map[queue.Topic]queue.Listener{topic: nop})

	t.Run("trusting client", func(t *testing.T) {
		r := openStream(t, dial(t, ts.addr, tlsCreds(&tls.Config{RootCAs: pki.pool, MinVersion: tls.VersionTLS13})))
		r.handshake()
		r.batch(1, topic, time.Time{}, []byte("x"))
		if a := r.ack(); a.GetBatchId() != 1 || a.GetBatchFailure() != nil {
			t.Fatalf("ack %v", a)
		}
	})
	t.Run("plaintext client refused", func(t *testing.T) {
		wantRefused(t, dial(t, ts.addr, nil), codes.Unavailable)
	})
	t.Run("client not trusting the CA refused", func(t *testing.T) {
		wantRefused(t, dial(t, ts.addr, tlsCreds(&tls.Config{MinVersion: tls.VersionTLS13})), codes.Unavailable)
	})
}

func TestMutualTLS(t *testing.T) {
	pki := newPKI(t)
	ts := startServer(t, sub.Config{TLS: &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientCAs:    pki.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}}, map[queue.Topic]queue.Listener{topic: nop})

	t.Run("client with certificate", func(t *testing.T) {
		r := openStream(t, dial(t, ts.addr, tlsCreds(&tls.Config{
			RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}, MinVersion: tls.VersionTLS13,
		})))
		r.handshake()
	})
	t.Run("client without certificate refused", func(t *testing.T) {
		wantRefused(t, dial(t, ts.addr, tlsCreds(&tls.Config{RootCAs: pki.pool, MinVersion: tls.VersionTLS13})), codes.Unavailable)
	})
	t.Run("client with a server-only certificate refused", func(t *testing.T) {
		wantRefused(t, dial(t, ts.addr, tlsCreds(&tls.Config{
			RootCAs: pki.pool, Certificates: []tls.Certificate{pki.server}, MinVersion: tls.VersionTLS13,
		})), codes.Unavailable)
	})
}
