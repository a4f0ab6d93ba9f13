package metadata

import (
	"context"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

type measureServer struct {
	databasev1.UnimplementedMeasureRegistryServiceServer
	store Store
}

func (s *measureServer) Create(ctx context.Context, req *databasev1.MeasureRegistryServiceCreateRequest) (*databasev1.MeasureRegistryServiceCreateResponse, error) {
	if req.GetMeasure() == nil {
		return nil, missing("measure")
	}
	rev, err := s.store.Create(ctx, req.GetMeasure())
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.MeasureRegistryServiceCreateResponse{ModRevision: rev}, nil
}

func (s *measureServer) Update(ctx context.Context, req *databasev1.MeasureRegistryServiceUpdateRequest) (*databasev1.MeasureRegistryServiceUpdateResponse, error) {
	if req.GetMeasure() == nil {
		return nil, missing("measure")
	}
	rev, err := s.store.Update(ctx, req.GetMeasure())
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.MeasureRegistryServiceUpdateResponse{ModRevision: rev}, nil
}

func (s *measureServer) Delete(ctx context.Context, req *databasev1.MeasureRegistryServiceDeleteRequest) (*databasev1.MeasureRegistryServiceDeleteResponse, error) {
	k, err := memberKey(registry.KindMeasure, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	if _, err := s.store.Delete(ctx, k); err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.MeasureRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *measureServer) Get(ctx context.Context, req *databasev1.MeasureRegistryServiceGetRequest) (*databasev1.MeasureRegistryServiceGetResponse, error) {
	k, err := memberKey(registry.KindMeasure, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	obj, err := s.store.Get(ctx, k)
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.MeasureRegistryServiceGetResponse{Measure: obj.Message.(*databasev1.Measure)}, nil
}

func (s *measureServer) List(ctx context.Context, req *databasev1.MeasureRegistryServiceListRequest) (*databasev1.MeasureRegistryServiceListResponse, error) {
	objs, err := listMembers(ctx, s.store, registry.KindMeasure, req.GetGroup())
	if err != nil {
		return nil, err
	}
	resp := &databasev1.MeasureRegistryServiceListResponse{Measure: make([]*databasev1.Measure, 0, len(objs))}
	for _, o := range objs {
		resp.Measure = append(resp.Measure, o.Message.(*databasev1.Measure))
	}
	return resp, nil
}

func (s *measureServer) Exist(ctx context.Context, req *databasev1.MeasureRegistryServiceExistRequest) (*databasev1.MeasureRegistryServiceExistResponse, error) {
	k, err := memberKey(registry.KindMeasure, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	hasGroup, hasMeasure, err := exist(ctx, s.store, k)
	if err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceExistResponse{HasGroup: hasGroup, HasMeasure: hasMeasure}, nil
}
