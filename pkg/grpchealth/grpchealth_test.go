package grpchealth

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A watcher sees SERVING, then, when the server drains, NOT_SERVING and
// the end of its stream; a graceful stop then returns at once.
func TestEndWatchesLetsGracefulStopFinish(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	h := New()
	h.Register(gs)
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first status %v, %v; want SERVING", r.GetStatus(), err)
	}

	h.EndWatches()
	sawNotServing := false
	for {
		r, err := w.Recv()
		if err != nil {
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("watch ended with %v, want Unavailable", err)
			}
			break
		}
		sawNotServing = sawNotServing || r.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING
	}
	if !sawNotServing {
		t.Fatal("the watch ended without NOT_SERVING")
	}

	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("graceful stop still waiting after the watches ended")
	}
	// A watch opened while draining ends at once too.
	if h.watchCtx.Err() == nil {
		t.Fatal("watch context not cancelled")
	}
}
