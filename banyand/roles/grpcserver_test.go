package roles

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The client port's health: NOT_SERVING until the server serves (its role
// started every component before it), SERVING while it does, NOT_SERVING
// to watchers once it drains; and a watcher does not hold up the drain.
func TestGRPCServerHealthFollowsLifecycle(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := newGRPCServer("client-grpc", "127.0.0.1:0", logger, nil, func(*grpc.Server) {})
	ctx := context.Background()
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		resp, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatus()
	}
	if st := check(); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("before Start: %v", st)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := check(); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("listening, not yet serving: %v", st)
	}

	serveCtx, cancelServe := context.WithCancel(ctx)
	defer cancelServe()
	served := make(chan error, 1)
	go func() { served <- s.Serve(serveCtx) }()

	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, cancelWatch := context.WithTimeout(ctx, 20*time.Second)
	defer cancelWatch()
	watch, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// Serve sets SERVING as it starts; the watch sees it first or next.
	for {
		resp, err := watch.Recv()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}

	stopCtx, cancelStop := context.WithTimeout(ctx, 10*time.Second)
	defer cancelStop()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(stopCtx) }()
	resp, err := watch.Recv()
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch while draining: %v %v, want NOT_SERVING", resp.GetStatus(), err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop with a health watcher connected: %v", err)
	}
	cancelServe()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
}
