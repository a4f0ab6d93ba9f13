package test

import (
	"testing"

	"google.golang.org/grpc"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
)

// checkAPIVersion asks what a BanyanDB client asks first: OAP refuses a
// server whose API version is not "0.10".
func checkAPIVersion(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	resp, err := commonv1.NewServiceClient(conn).GetAPIVersion(ctxT(t), &commonv1.GetAPIVersionRequest{})
	if err != nil {
		t.Fatalf("GetAPIVersion: %v", err)
	}
	if v := resp.GetVersion().GetVersion(); v != "0.10" {
		t.Fatalf("API version %q, want 0.10", v)
	}
}

func TestStandaloneAPIVersion(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	checkAPIVersion(t, conn)
}

func TestClusterAPIVersion(t *testing.T) {
	c := startCluster(t, 1, 1)
	checkAPIVersion(t, c.liaisons[0])
}
