package pub_test

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
	"github.com/banyand-io/banyand/pkg/tlsutil"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

// startTLSNode is startNode serving tlsCfg.
func startTLSNode(t *testing.T, name string, tlsCfg *tls.Config, l queue.Listener, failures *atomic.Int64) *testNode {
	t.Helper()
	onFailure := func(net.Addr, error) { failures.Add(1) }
	srv := sub.New(sub.Config{NodeName: name, TLS: tlsCfg, OnHandshakeFailure: onFailure}, nil)
	if err := srv.Subscribe(topic, l); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{name: name, srv: srv, addr: lis.Addr().String(), served: make(chan error, 1)}
	go func() { n.served <- srv.Serve(lis) }()
	t.Cleanup(func() { n.stop(t, time.Second) })
	return n
}

func reloader(t *testing.T, ca *tlstest.CA, dir, name string) *tlsutil.Reloader {
	t.Helper()
	c, k := ca.IssueFiles(dir, name)
	r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: c, KeyFile: k}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A data node requiring client certificates of the cluster CA takes
// writes from a publisher holding one and refuses every other publisher:
// none of their messages reaches its listener.
func TestMutualTLSPublisher(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cluster CA")
	other := tlstest.NewCA(t, "other CA")
	rec := newRecorder(false)
	var failures atomic.Int64
	n := startTLSNode(t, "data-tls", tlsutil.ServerConfig(reloader(t, ca, dir, "data"), ca.Pool()), rec, &failures)

	publish := func(t *testing.T, tlsCfg *tls.Config, prefix string, timeout time.Duration) (acked []sent, failed map[string]error) {
		cfg := fastConfig()
		cfg.TLS = tlsCfg
		c := newClient(t, cfg, newRouter(t, n))
		p := c.NewBatchPublisher(timeout)
		defer p.Close()
		return outcomes(t, publishN(context.Background(), t, p, prefix, 50))
	}
	t.Run("publisher with a certificate of the CA", func(t *testing.T) {
		acked, failed := publish(t, tlsutil.ClientConfig(ca.Pool(), reloader(t, ca, dir, "liaison"), ""), "good", waitMax)
		if len(failed) > 0 || len(acked) != 50 {
			t.Fatalf("%d acked, %d failed, e.g. %s", len(acked), len(failed), first(failed))
		}
		if n := failures.Load(); n != 0 {
			t.Fatalf("node reported %d failed handshakes with a trusted publisher", n)
		}
		for _, m := range acked {
			if !rec.has(m.payload) {
				t.Fatalf("%s acked but not received", m.payload)
			}
		}
	})
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"publisher without a certificate", tlsutil.ClientConfig(ca.Pool(), nil, "")},
		{"publisher with another CA's certificate", tlsutil.ClientConfig(ca.Pool(), reloader(t, other, dir, "stranger"), "")},
		{"publisher not trusting the node", tlsutil.ClientConfig(other.Pool(), reloader(t, ca, dir, "liaison2"), "")},
		{"plaintext publisher", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := failures.Load()
			acked, failed := publish(t, tc.cfg, tc.name, time.Second)
			if failures.Load() == before {
				t.Error("the node reported no failed handshake")
			}
			if len(acked) != 0 || len(failed) != 50 {
				t.Fatalf("%d acked, %d failed; want all 50 refused", len(acked), len(failed))
			}
			t.Logf("e.g. %s", first(failed))
			for _, m := range acked {
				t.Errorf("%s acked", m.payload)
			}
			if distinct, _ := rec.count(); distinct != 50 {
				t.Fatalf("listener saw %d distinct messages, want only the 50 of the trusted publisher", distinct)
			}
		})
	}
}
