package metadata

import (
	"context"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

type traceServer struct {
	databasev1.UnimplementedTraceRegistryServiceServer
	members[*databasev1.Trace]
}

func (s *traceServer) Create(ctx context.Context, req *databasev1.TraceRegistryServiceCreateRequest) (*databasev1.TraceRegistryServiceCreateResponse, error) {
	rev, err := s.create(ctx, req.GetTrace())
	if err != nil {
		return nil, err
	}
	return &databasev1.TraceRegistryServiceCreateResponse{ModRevision: rev}, nil
}

func (s *traceServer) Update(ctx context.Context, req *databasev1.TraceRegistryServiceUpdateRequest) (*databasev1.TraceRegistryServiceUpdateResponse, error) {
	rev, err := s.update(ctx, req.GetTrace())
	if err != nil {
		return nil, err
	}
	return &databasev1.TraceRegistryServiceUpdateResponse{ModRevision: rev}, nil
}

func (s *traceServer) Delete(ctx context.Context, req *databasev1.TraceRegistryServiceDeleteRequest) (*databasev1.TraceRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.TraceRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *traceServer) Get(ctx context.Context, req *databasev1.TraceRegistryServiceGetRequest) (*databasev1.TraceRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.TraceRegistryServiceGetResponse{Trace: m}, nil
}

func (s *traceServer) List(ctx context.Context, req *databasev1.TraceRegistryServiceListRequest) (*databasev1.TraceRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.TraceRegistryServiceListResponse{Trace: l}, nil
}

func (s *traceServer) Exist(ctx context.Context, req *databasev1.TraceRegistryServiceExistRequest) (*databasev1.TraceRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.TraceRegistryServiceExistResponse{HasGroup: g, HasTrace: ok}, nil
}

type propertyServer struct {
	databasev1.UnimplementedPropertyRegistryServiceServer
	members[*databasev1.Property]
}

func (s *propertyServer) Create(ctx context.Context, req *databasev1.PropertyRegistryServiceCreateRequest) (*databasev1.PropertyRegistryServiceCreateResponse, error) {
	rev, err := s.create(ctx, req.GetProperty())
	if err != nil {
		return nil, err
	}
	return &databasev1.PropertyRegistryServiceCreateResponse{ModRevision: rev}, nil
}

func (s *propertyServer) Update(ctx context.Context, req *databasev1.PropertyRegistryServiceUpdateRequest) (*databasev1.PropertyRegistryServiceUpdateResponse, error) {
	rev, err := s.update(ctx, req.GetProperty())
	if err != nil {
		return nil, err
	}
	return &databasev1.PropertyRegistryServiceUpdateResponse{ModRevision: rev}, nil
}

func (s *propertyServer) Delete(ctx context.Context, req *databasev1.PropertyRegistryServiceDeleteRequest) (*databasev1.PropertyRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.PropertyRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *propertyServer) Get(ctx context.Context, req *databasev1.PropertyRegistryServiceGetRequest) (*databasev1.PropertyRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.PropertyRegistryServiceGetResponse{Property: m}, nil
}

func (s *propertyServer) List(ctx context.Context, req *databasev1.PropertyRegistryServiceListRequest) (*databasev1.PropertyRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.PropertyRegistryServiceListResponse{Properties: l}, nil
}

func (s *propertyServer) Exist(ctx context.Context, req *databasev1.PropertyRegistryServiceExistRequest) (*databasev1.PropertyRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.PropertyRegistryServiceExistResponse{HasGroup: g, HasProperty: ok}, nil
}
