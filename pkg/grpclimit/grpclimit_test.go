package grpclimit

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/banyand-io/banyand/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStreamsRefusesBeyondTheLimit holds the limit's worth of Watch
// streams open over two connections: the next one is refused with
// RESOURCE_EXHAUSTED, the open ones still work, and once one closes a new
// one is admitted.
func TestStreamsRefusesBeyondTheLimit(t *testing.T) {
	const limit = 3
	lim := NewStreams(limit)
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(lim.Interceptor()))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var clients []healthpb.HealthClient
	for range 2 {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		clients = append(clients, healthpb.NewHealthClient(conn))
	}
	watch := func(c healthpb.HealthClient) (grpc.ServerStreamingClient[healthpb.HealthCheckResponse], context.CancelFunc, error) {
		sctx, scancel := context.WithCancel(ctx)
		w, err := c.Watch(sctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv() // the first answer: the stream is admitted and running
		}
		return w, scancel, err
	}
	var cancels []context.CancelFunc
	for i := range limit {
		_, c, err := watch(clients[i%2])
		if err != nil {
			t.Fatalf("stream %d within the limit: %v", i, err)
		}
		cancels = append(cancels, c)
	}
	if got := lim.Open(); got != limit {
		t.Fatalf("open = %d, want %d", got, limit)
	}
	_, c, err := watch(clients[1])
	c()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("stream beyond the limit: %v, want RESOURCE_EXHAUSTED", err)
	}
	if _, err := clients[0].Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("unary call while streams are at the limit: %v", err)
	}
	cancels[0]()
	poll.Within(t, 10*time.Second, "a cancelled stream no longer counted", func() bool { return lim.Open() < limit })
	_, c, err = watch(clients[1])
	if err != nil {
		t.Fatalf("stream after one closed: %v", err)
	}
	c()
	for _, c := range cancels[1:] {
		c()
	}
}
