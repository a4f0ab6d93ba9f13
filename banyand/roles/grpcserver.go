package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/banyand-io/banyand/pkg/grpchealth"
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
	// health's Watch streams end when draining begins (see grpchealth).
	health *grpchealth.Service

	mu  sync.Mutex
	lis net.Listener
}

func newGRPCServer(name, addr string, logger *slog.Logger, opts []grpc.ServerOption, register func(*grpc.Server)) *grpcServer {
	s := &grpcServer{name: name, addr: addr, logger: logger, server: grpc.NewServer(opts...), health: grpchealth.New()}
	register(s.server)
	s.health.Register(s.server)
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
	s.health.EndWatches()
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
