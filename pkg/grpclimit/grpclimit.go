// Package grpclimit bounds what clients may hold open on a gRPC server: the
// streaming calls in flight over all connections. (HTTP/2 bounds the calls
// of one connection: grpc.MaxConcurrentStreams.)
package grpclimit

import (
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Streams admits at most max streaming calls at once over every
// connection; a call beyond that is refused with RESOURCE_EXHAUSTED before
// its handler runs, and the calls already open go on. Idle write streams
// cost memory and goroutines, so a client that opens thousands must not
// take the server down.
type Streams struct {
	max  int64
	open atomic.Int64
}

// NewStreams returns a limiter of max open streams; max < 1 means no limit.
func NewStreams(max int) *Streams { return &Streams{max: int64(max)} }

// Open is the number of streaming calls running now.
func (s *Streams) Open() int64 { return s.open.Load() }

// Interceptor is the server interceptor that applies the limit.
func (s *Streams) Interceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if s.max < 1 {
			return handler(srv, ss)
		}
		if n := s.open.Add(1); n > s.max {
			s.open.Add(-1)
			return status.Errorf(codes.ResourceExhausted, "%s: %d streams are open, the server's limit (--max-streams)", info.FullMethod, s.max)
		}
		defer s.open.Add(-1)
		return handler(srv, ss)
	}
}
