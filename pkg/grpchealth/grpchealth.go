// Package grpchealth is grpc's health service made to let go of its
// watchers when a server drains. A Watch stream never ends on its own, so
// with grpc's plain health server a graceful stop waits for every watcher
// (a load balancer, an orchestrator) to hang up, until its deadline.
package grpchealth

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Service serves Check, List and Watch from a health.Server; Watch streams
// end, with a last NOT_SERVING, once EndWatches is called.
type Service struct {
	*health.Server
	watchCtx   context.Context
	endWatches context.CancelFunc
}

// New returns a Service over a new health.Server.
func New() *Service {
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{Server: health.NewServer(), watchCtx: ctx, endWatches: cancel}
}

// Register registers s as gs's health service.
func (s *Service) Register(gs *grpc.Server) { healthpb.RegisterHealthServer(gs, s) }

// EndWatches marks every service NOT_SERVING and ends the Watch streams,
// running and future. Call it when the server starts draining.
func (s *Service) EndWatches() {
	s.Shutdown()
	s.endWatches()
}

// Watch implements healthpb.HealthServer.
func (s *Service) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stop := context.AfterFunc(s.watchCtx, cancel)
	defer stop()
	err := s.Server.Watch(req, watchStream{stream, ctx})
	if s.watchCtx.Err() == nil || stream.Context().Err() != nil {
		return err
	}
	// Draining: the watch may have ended before the health server sent
	// NOT_SERVING; say it, then hang up.
	_ = stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
	return status.Error(codes.Unavailable, "server is draining")
}

type watchStream struct {
	grpc.ServerStreamingServer[healthpb.HealthCheckResponse]
	ctx context.Context
}

func (w watchStream) Context() context.Context { return w.ctx }
