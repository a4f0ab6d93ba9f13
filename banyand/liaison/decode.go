package liaison

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// decodeAsClientError returns a copy of desc whose unary methods decode
// their requests themselves and answer a request that does not decode
// with InvalidArgument: it is the client's mistake. grpc would answer
// INTERNAL, also for a query whose criteria nest deeper than protobuf's
// recursion limit. The request is first read as an empty message, which
// keeps its bytes as unknown fields without parsing them.
func decodeAsClientError(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		handler := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			return handler(srv, ctx, func(v any) error {
				var raw emptypb.Empty
				if err := dec(&raw); err != nil {
					return err
				}
				req, ok := v.(proto.Message)
				if !ok { // generated handlers always decode into a message
					return status.Errorf(codes.Internal, "%s: cannot decode into %T", m.MethodName, v)
				}
				if err := proto.Unmarshal(raw.ProtoReflect().GetUnknown(), req); err != nil {
					return status.Errorf(codes.InvalidArgument, "%s request does not decode: %v", m.MethodName, err)
				}
				return nil
			}, interceptor)
		}
		out.Methods[i] = m
	}
	return &out
}
