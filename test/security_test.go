package test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/run"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

// secureCluster is an in-process cluster with every link secured: etcd
// over TLS with client certificates, mutual TLS between the liaison and
// the data nodes, and TLS plus token auth on the client API.
type secureCluster struct {
	dir         string
	ca          *tlstest.CA // one CA for etcd, the cluster and the client API
	caFile      string
	liaisonAddr string
}

const (
	adminToken  = "admin-token"
	readerToken = "reader-token"
)

func startSecureCluster(t *testing.T, dataNodes int) *secureCluster {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "banyand test CA")
	c := &secureCluster{dir: dir, ca: ca, caFile: ca.WriteCA(dir, "ca.crt")}

	etcdCert, etcdKey := ca.IssueFiles(dir, "etcd")
	srv := etcdtest.StartWith(t, etcdtest.Options{TLS: &etcdtest.TLSOptions{
		CertFile: etcdCert, KeyFile: etcdKey, CAFile: c.caFile, ClientCertAuth: true,
	}})
	etcdClientCert, etcdClientKey := ca.IssueFiles(dir, "etcd-client")
	for i := range dataNodes {
		var s roles.Storage
		s.SetDefaults()
		s.GRPCAddr = "127.0.0.1:0"
		s.HTTPAddr = ""
		s.DataPath = t.TempDir()
		s.NodeName = fmt.Sprintf("data-%d", i)
		s.NodeTTL = 2 * time.Second
		s.Etcd.Endpoints = []string{srv.URL()}
		s.Etcd.TLSCAFile, s.Etcd.TLSCertFile, s.Etcd.TLSKeyFile = c.caFile, etcdClientCert, etcdClientKey
		cert, key := ca.IssueFiles(dir, s.NodeName)
		s.ClusterTLS = security.ClusterServerTLS{CertFile: cert, KeyFile: key, CAFile: c.caFile}
		runStorage(t, &s)
	}

	l := newLiaison(srv.URL())
	l.Etcd.TLSCAFile, l.Etcd.TLSCertFile, l.Etcd.TLSKeyFile = c.caFile, etcdClientCert, etcdClientKey
	clusterCert, clusterKey := ca.IssueFiles(dir, "liaison-cluster")
	l.ClusterTLS = security.ClusterClientTLS{CAFile: c.caFile, CertFile: clusterCert, KeyFile: clusterKey}
	apiCert, apiKey := ca.IssueFiles(dir, "liaison-api")
	l.SetClientSecurity(security.ClientSecurity{TLS: true, CertFile: apiCert, KeyFile: apiKey, AuthFile: writeAuthFile(t, dir)})
	runClientRole(t, "liaison", l)
	c.liaisonAddr = l.ClientAddr()
	return c
}

func writeAuthFile(t *testing.T, dir string) string {
	t.Helper()
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	path := filepath.Join(dir, "auth.yaml")
	// The users are for the HTTP API's basic auth (httpauth_test.go).
	content := fmt.Sprintf(`tokens:
  - {name: admin, sha256: %s, scopes: [read, write, schema]}
  - {name: dashboard, sha256: %s, scopes: [read]}
users:
  - {name: ops, password_hash: "sha256:%s", scopes: [read, write, schema]}
  - {name: viewer, password_hash: "sha256:%s", scopes: [read]}
`, sum(adminToken), sum(readerToken), sum("ops-pw"), sum("viewer-pw"))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bearer sends a token with every call.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return true }

func dialTLS(t *testing.T, addr string, roots *x509.CertPool, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	creds := credentials.NewTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(creds))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestSecureClusterRoundTrip(t *testing.T) {
	c := startSecureCluster(t, 2)
	admin := dialTLS(t, c.liaisonAddr, c.ca.Pool(), grpc.WithPerRPCCredentials(bearer(adminToken)))
	createStreamSchema(t, admin, 4)
	checkStreamRoundTrip(t, admin, 200, 20)

	t.Run("plaintext client refused", func(t *testing.T) {
		_, err := healthpb.NewHealthClient(dial(t, c.liaisonAddr)).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("plaintext health check on a TLS liaison: %v, want Unavailable", err)
		}
	})
	t.Run("client not trusting the CA refused", func(t *testing.T) {
		other := tlstest.NewCA(t, "other CA")
		_, err := healthpb.NewHealthClient(dialTLS(t, c.liaisonAddr, other.Pool())).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("health check trusting another CA: %v, want Unavailable", err)
		}
	})
	t.Run("health needs no credentials", func(t *testing.T) {
		if _, err := healthpb.NewHealthClient(dialTLS(t, c.liaisonAddr, c.ca.Pool())).Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	})

	listGroups := func(conn *grpc.ClientConn) error {
		_, err := databasev1.NewGroupRegistryServiceClient(conn).List(ctxT(t), &databasev1.GroupRegistryServiceListRequest{})
		return err
	}
	t.Run("no credentials: Unauthenticated", func(t *testing.T) {
		if err := listGroups(dialTLS(t, c.liaisonAddr, c.ca.Pool())); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("list without credentials: %v, want Unauthenticated", err)
		}
	})
	t.Run("bad credentials: Unauthenticated", func(t *testing.T) {
		conn := dialTLS(t, c.liaisonAddr, c.ca.Pool(), grpc.WithPerRPCCredentials(bearer("guess")))
		if err := listGroups(conn); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("list with a wrong token: %v, want Unauthenticated", err)
		}
	})
	reader := dialTLS(t, c.liaisonAddr, c.ca.Pool(), grpc.WithPerRPCCredentials(bearer(readerToken)))
	t.Run("read token reads", func(t *testing.T) {
		if err := listGroups(reader); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("read token may not write: PermissionDenied", func(t *testing.T) {
		ws, err := streamv1.NewStreamServiceClient(reader).Write(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		_ = ws.Send(&streamv1.WriteRequest{Metadata: &commonv1.Metadata{Group: streamGroup, Name: streamName},
			Element: testElement(0, 1), MessageId: 1})
		if _, err := ws.Recv(); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("write with a read token: %v, want PermissionDenied", err)
		}
	})
	t.Run("read token may not change the schema: PermissionDenied", func(t *testing.T) {
		_, err := databasev1.NewGroupRegistryServiceClient(reader).Delete(ctxT(t),
			&databasev1.GroupRegistryServiceDeleteRequest{Group: streamGroup})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("delete with a read token: %v, want PermissionDenied", err)
		}
	})
}

// A certificate renewed in place is served to new connections without a
// restart.
func TestClientAPICertificateRotation(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "banyand test CA")
	first := ca.Issue("standalone")
	certFile, keyFile := first.Write(t, dir, "api")

	var sa roles.Standalone
	sa.SetDefaults("127.0.0.1:0", t.TempDir())
	sa.SetClientSecurity(security.ClientSecurity{TLS: true, CertFile: certFile, KeyFile: keyFile})
	runClientRole(t, "standalone", &sa)

	// servedSerial makes a new connection and returns the serial of the
	// certificate the server presented on it.
	servedSerial := func() *big.Int {
		conn := dialTLS(t, sa.ClientAddr(), ca.Pool())
		defer conn.Close()
		var p peer.Peer
		if _, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
			t.Fatal(err)
		}
		return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].SerialNumber
	}
	if got := servedSerial(); got.Cmp(first.Serial) != 0 {
		t.Fatalf("serves serial %s, want %s", got, first.Serial)
	}

	// The renewal, written as cert-manager or an operator would: both files
	// replaced in place.
	second := ca.Issue("standalone")
	second.Write(t, dir, "api")
	later := time.Now().Add(time.Second)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for servedSerial().Cmp(second.Serial) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("renewed certificate (serial %s) not served after 20s", second.Serial)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A data node whose etcd CA does not match etcd's certificate fails to
// start and says why, instead of retrying registry calls forever.
func TestDataNodeRefusesEtcdWithUnknownCA(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "etcd CA")
	etcdCert, etcdKey := ca.IssueFiles(dir, "etcd")
	srv := etcdtest.StartWith(t, etcdtest.Options{TLS: &etcdtest.TLSOptions{CertFile: etcdCert, KeyFile: etcdKey}})

	var s roles.Storage
	s.SetDefaults()
	s.GRPCAddr = "127.0.0.1:0"
	s.HTTPAddr = ""
	s.DataPath = t.TempDir()
	s.Etcd.Endpoints = []string{srv.URL()}
	s.Etcd.TLSCAFile = tlstest.NewCA(t, "other CA").WriteCA(dir, "other-ca.crt")
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	comps, err := s.Components(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = run.NewGroup(run.Config{Name: "storage"}, testLogger(t), comps...).Run(ctx)
	if !errors.Is(err, etcd.ErrTLSRefused) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("start with the wrong etcd CA: %v, want ErrTLSRefused naming the unknown authority", err)
	}
}
