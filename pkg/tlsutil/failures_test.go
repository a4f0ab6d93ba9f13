package tlsutil_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/tlsutil"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

func TestServerCredentialsReportFailedHandshakes(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "CA")
	c, k := ca.IssueFiles(dir, "server")
	r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c, KeyFile: k}, nil)
	if err != nil {
		t.Fatal(err)
	}
	failures := tlsutil.NewHandshakeFailures(nil, 0)
	gs := grpc.NewServer(grpc.Creds(tlsutil.ServerCredentials(tlsutil.ServerConfig(r, nil), failures.Report)))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	check := func(roots *tlstest.CA) error {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(
			credentials.NewTLS(&tls.Config{RootCAs: roots.Pool(), MinVersion: tls.VersionTLS12})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := check(ca); err != nil {
		t.Fatal(err)
	}
	if n := failures.Count(); n != 0 {
		t.Fatalf("%d failures after a good handshake", n)
	}
	if err := check(tlstest.NewCA(t, "other")); err == nil {
		t.Fatal("a client trusting another CA got an answer")
	}
	poll.Until(t, "the failed handshake is reported", func() bool { return failures.Count() > 0 })
}

func TestHandshakeFailuresIgnoreProbesAndLimitLogs(t *testing.T) {
	var log strings.Builder
	h := tlsutil.NewHandshakeFailures(slogTo(&log), time.Hour)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	h.Report(addr, io.EOF)
	if h.Count() != 0 {
		t.Fatal("a connection closed before TLS counted as a failure")
	}
	for range 3 {
		h.Report(addr, errors.New("tls: bad certificate"))
	}
	if h.Count() != 3 {
		t.Fatalf("count %d, want 3", h.Count())
	}
	if n := strings.Count(log.String(), "TLS handshake failed"); n != 1 {
		t.Fatalf("%d log lines within one interval, want 1:\n%s", n, log.String())
	}
}
