// Package metadata serves BanyanDB's schema registry gRPC services (groups,
// streams, measures, index rules and their bindings, TopN aggregations,
// traces and properties) on top of a registry store. It is the wire edge: registry errors become gRPC
// status codes here and nowhere else.
package metadata

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

// Store is what the services need from a registry.
type Store interface {
	registry.Reader
	registry.Writer
	registry.GroupDeleter
}

// Service implements the registry services over one Store.
type Service struct {
	store Store
}

// New returns the services over store.
func New(store Store) *Service { return &Service{store: store} }

// Register registers every registry service on s.
func (svc *Service) Register(s *grpc.Server) {
	st := svc.store
	databasev1.RegisterGroupRegistryServiceServer(s, &groupServer{store: st})
	databasev1.RegisterStreamRegistryServiceServer(s, &streamServer{members: members[*databasev1.Stream]{st, registry.KindStream, "stream"}})
	databasev1.RegisterMeasureRegistryServiceServer(s, &measureServer{members: members[*databasev1.Measure]{st, registry.KindMeasure, "measure"}})
	databasev1.RegisterIndexRuleRegistryServiceServer(s, &indexRuleServer{members: members[*databasev1.IndexRule]{st, registry.KindIndexRule, "index_rule"}})
	databasev1.RegisterIndexRuleBindingRegistryServiceServer(s, &indexRuleBindingServer{
		members: members[*databasev1.IndexRuleBinding]{st, registry.KindIndexRuleBinding, "index_rule_binding"}})
	databasev1.RegisterTopNAggregationRegistryServiceServer(s, &topNAggregationServer{
		members: members[*databasev1.TopNAggregation]{st, registry.KindTopNAggregation, "top_n_aggregation"}})
	databasev1.RegisterTraceRegistryServiceServer(s, &traceServer{members: members[*databasev1.Trace]{st, registry.KindTrace, "trace"}})
	databasev1.RegisterPropertyRegistryServiceServer(s, &propertyServer{members: members[*databasev1.Property]{st, registry.KindProperty, "property"}})
}

// toStatus maps a registry error to its gRPC status; the message keeps the
// registry's words (which name the bad field or the missing object).
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	switch {
	case errors.Is(err, registry.ErrInvalidArgument):
		code = codes.InvalidArgument
	case errors.Is(err, registry.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, registry.ErrAlreadyExists):
		code = codes.AlreadyExists
	case errors.Is(err, registry.ErrFailedPrecondition):
		code = codes.FailedPrecondition
	case errors.Is(err, registry.ErrUnimplemented):
		code = codes.Unimplemented
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}

func missing(field string) error {
	return status.Errorf(codes.InvalidArgument, "%s: required", field)
}
