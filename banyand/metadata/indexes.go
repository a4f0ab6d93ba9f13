package metadata

import (
	"context"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

type indexRuleServer struct {
	databasev1.UnimplementedIndexRuleRegistryServiceServer
	members[*databasev1.IndexRule]
}

func (s *indexRuleServer) Create(ctx context.Context, req *databasev1.IndexRuleRegistryServiceCreateRequest) (*databasev1.IndexRuleRegistryServiceCreateResponse, error) {
	_, err := s.create(ctx, req.GetIndexRule())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleRegistryServiceCreateResponse{}, nil
}

func (s *indexRuleServer) Update(ctx context.Context, req *databasev1.IndexRuleRegistryServiceUpdateRequest) (*databasev1.IndexRuleRegistryServiceUpdateResponse, error) {
	_, err := s.update(ctx, req.GetIndexRule())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleRegistryServiceUpdateResponse{}, nil
}

func (s *indexRuleServer) Delete(ctx context.Context, req *databasev1.IndexRuleRegistryServiceDeleteRequest) (*databasev1.IndexRuleRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *indexRuleServer) Get(ctx context.Context, req *databasev1.IndexRuleRegistryServiceGetRequest) (*databasev1.IndexRuleRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleRegistryServiceGetResponse{IndexRule: m}, nil
}

func (s *indexRuleServer) List(ctx context.Context, req *databasev1.IndexRuleRegistryServiceListRequest) (*databasev1.IndexRuleRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleRegistryServiceListResponse{IndexRule: l}, nil
}

func (s *indexRuleServer) Exist(ctx context.Context, req *databasev1.IndexRuleRegistryServiceExistRequest) (*databasev1.IndexRuleRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleRegistryServiceExistResponse{HasGroup: g, HasIndexRule: ok}, nil
}

type indexRuleBindingServer struct {
	databasev1.UnimplementedIndexRuleBindingRegistryServiceServer
	members[*databasev1.IndexRuleBinding]
}

func (s *indexRuleBindingServer) Create(ctx context.Context, req *databasev1.IndexRuleBindingRegistryServiceCreateRequest) (*databasev1.IndexRuleBindingRegistryServiceCreateResponse, error) {
	_, err := s.create(ctx, req.GetIndexRuleBinding())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleBindingRegistryServiceCreateResponse{}, nil
}

func (s *indexRuleBindingServer) Update(ctx context.Context, req *databasev1.IndexRuleBindingRegistryServiceUpdateRequest) (*databasev1.IndexRuleBindingRegistryServiceUpdateResponse, error) {
	_, err := s.update(ctx, req.GetIndexRuleBinding())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleBindingRegistryServiceUpdateResponse{}, nil
}

func (s *indexRuleBindingServer) Delete(ctx context.Context, req *databasev1.IndexRuleBindingRegistryServiceDeleteRequest) (*databasev1.IndexRuleBindingRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleBindingRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *indexRuleBindingServer) Get(ctx context.Context, req *databasev1.IndexRuleBindingRegistryServiceGetRequest) (*databasev1.IndexRuleBindingRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleBindingRegistryServiceGetResponse{IndexRuleBinding: m}, nil
}

func (s *indexRuleBindingServer) List(ctx context.Context, req *databasev1.IndexRuleBindingRegistryServiceListRequest) (*databasev1.IndexRuleBindingRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleBindingRegistryServiceListResponse{IndexRuleBinding: l}, nil
}

func (s *indexRuleBindingServer) Exist(ctx context.Context, req *databasev1.IndexRuleBindingRegistryServiceExistRequest) (*databasev1.IndexRuleBindingRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.IndexRuleBindingRegistryServiceExistResponse{HasGroup: g, HasIndexRuleBinding: ok}, nil
}

type topNAggregationServer struct {
	databasev1.UnimplementedTopNAggregationRegistryServiceServer
	members[*databasev1.TopNAggregation]
}

func (s *topNAggregationServer) Create(ctx context.Context, req *databasev1.TopNAggregationRegistryServiceCreateRequest) (*databasev1.TopNAggregationRegistryServiceCreateResponse, error) {
	_, err := s.create(ctx, req.GetTopNAggregation())
	if err != nil {
		return nil, err
	}
	return &databasev1.TopNAggregationRegistryServiceCreateResponse{}, nil
}

func (s *topNAggregationServer) Update(ctx context.Context, req *databasev1.TopNAggregationRegistryServiceUpdateRequest) (*databasev1.TopNAggregationRegistryServiceUpdateResponse, error) {
	_, err := s.update(ctx, req.GetTopNAggregation())
	if err != nil {
		return nil, err
	}
	return &databasev1.TopNAggregationRegistryServiceUpdateResponse{}, nil
}

func (s *topNAggregationServer) Delete(ctx context.Context, req *databasev1.TopNAggregationRegistryServiceDeleteRequest) (*databasev1.TopNAggregationRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.TopNAggregationRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *topNAggregationServer) Get(ctx context.Context, req *databasev1.TopNAggregationRegistryServiceGetRequest) (*databasev1.TopNAggregationRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.TopNAggregationRegistryServiceGetResponse{TopNAggregation: m}, nil
}

func (s *topNAggregationServer) List(ctx context.Context, req *databasev1.TopNAggregationRegistryServiceListRequest) (*databasev1.TopNAggregationRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.TopNAggregationRegistryServiceListResponse{TopNAggregation: l}, nil
}

func (s *topNAggregationServer) Exist(ctx context.Context, req *databasev1.TopNAggregationRegistryServiceExistRequest) (*databasev1.TopNAggregationRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.TopNAggregationRegistryServiceExistResponse{HasGroup: g, HasTopNAggregation: ok}, nil
}
