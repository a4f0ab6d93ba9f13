package tlsutil_test

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/banyand-io/banyand/pkg/tlsutil"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

// A pinned client accepts exactly the certificate its reloader serves, and
// a server with another one (even from the same CA) is refused.
func TestPinnedClientConfig(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	own := reloader(t, ca, dir, "own")
	other := reloader(t, ca, dir, "other")
	ownAddr := tlsServer(t, tlsutil.ServerConfig(own, nil))
	otherAddr := tlsServer(t, tlsutil.ServerConfig(other, nil))

	c, err := tls.Dial("tcp", ownAddr, tlsutil.PinnedClientConfig(own))
	if err != nil {
		t.Fatalf("dial the own server: %v", err)
	}
	_ = c.Close()
	if c, err := tls.Dial("tcp", otherAddr, tlsutil.PinnedClientConfig(own)); err == nil || !strings.Contains(err.Error(), "not this process's own") {
		if c != nil {
			_ = c.Close()
		}
		t.Fatalf("dial a server with another certificate: %v, want refused by the pin", err)
	}
}

func reloader(t *testing.T, ca *tlstest.CA, dir, name string) *tlsutil.Reloader {
	t.Helper()
	cert, key := ca.IssueFiles(dir, name)
	r, err := tlsutil.NewReloader(tlsutil.ReloaderConfig{CertFile: cert, KeyFile: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
