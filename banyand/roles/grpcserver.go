package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// grpcServer is a run component serving a grpc.Server on one address, with
// the health service (NOT_SERVING until Serve runs, which the role reaches
// only after every component before it started; SERVING while serving;
// NOT_SERVING while draining) and server reflection, so grpcurl works
// without proto files.
type grpcServer struct {
	name   string
	addr   string
	logger *slog.Logger
	server *grpc.Server
	health *health.Server
	// endWatches ends health Watch streams when draining begins; a watch
	// never ends on its own and would hold a graceful stop to its deadline.
	watchCtx   context.Context
	endWatches context.CancelFunc

	mu  sync.Mutex
	lis net.Listener
}

func newGRPCServer(name, addr string, logger *slog.Logger, opts []grpc.ServerOption, register func(*grpc.Server)) *grpcServer {
	s := &grpcServer{name: name, addr: addr, logger: logger, server: grpc.NewServer(opts...), health: health.NewServer()}
	s.watchCtx, s.endWatches = context.WithCancel(context.Background())
	register(s.server)
	healthpb.RegisterHealthServer(s.server, healthService{Server: s.health, watchCtx: s.watchCtx})
	reflection.Register(s.server)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return s
}

func (s *grpcServer) Name() string { return s.name }

// Start binds the address, so a taken port fails the start and later
// components can rely on the server being reachable.
func (s *grpcServer) Start(context.Context) error {
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.addr, err)
	}
	s.mu.Lock()
	s.lis = lis
	s.mu.Unlock()
	s.logger.Info("gRPC server listening", "server", s.name, "addr", lis.Addr().String())
	return nil
}

// Addr is the bound address (useful with port 0); empty before Start.
func (s *grpcServer) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return ""
	}
	return s.lis.Addr().String()
}

func (s *grpcServer) Serve(ctx context.Context) error {
	s.mu.Lock()
	lis := s.lis
	s.mu.Unlock()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			s.server.Stop()
		case <-stopped:
		}
	}()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := s.server.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return ctx.Err()
}

// Stop drains: new RPCs are refused, running ones (client write streams)
// may finish until ctx's deadline, then connections are closed.
func (s *grpcServer) Stop(ctx context.Context) error {
	s.health.Shutdown()
	s.endWatches()
	done := make(chan struct{})
	go func() {
		s.server.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.server.Stop()
		<-done
		return fmt.Errorf("%s: forced to stop with RPCs still running: %w", s.name, ctx.Err())
	}
}

// healthService is grpc's health server whose Watch streams end, with a
// last NOT_SERVING, once watchCtx is cancelled.
type healthService struct {
	*health.Server
	watchCtx context.Context
}

func (h healthService) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stop := context.AfterFunc(h.watchCtx, cancel)
	defer stop()
	err := h.Server.Watch(req, watchStream{stream, ctx})
	if h.watchCtx.Err() == nil || stream.Context().Err() != nil {
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
