package sub

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthService is grpc's health server whose Watch streams also end when
// watchCtx is cancelled. A watch never ends on its own, so without this a
// graceful stop would wait for every watcher to hang up.
type healthService struct {
	*health.Server
	watchCtx context.Context
}

func (h healthService) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stop := context.AfterFunc(h.watchCtx, cancel)
	defer stop()
	return h.Server.Watch(req, watchStream{stream, ctx})
}

type watchStream struct {
	grpc.ServerStreamingServer[healthpb.HealthCheckResponse]
	ctx context.Context
}

func (w watchStream) Context() context.Context { return w.ctx }
