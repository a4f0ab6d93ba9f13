package metadata

import (
	"context"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

type groupServer struct {
	databasev1.UnimplementedGroupRegistryServiceServer
	store Store
}

func (g *groupServer) Create(ctx context.Context, req *databasev1.GroupRegistryServiceCreateRequest) (*databasev1.GroupRegistryServiceCreateResponse, error) {
	if req.GetGroup() == nil {
		return nil, missing("group")
	}
	if _, err := g.store.Create(ctx, req.GetGroup()); err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.GroupRegistryServiceCreateResponse{}, nil
}

func (g *groupServer) Update(ctx context.Context, req *databasev1.GroupRegistryServiceUpdateRequest) (*databasev1.GroupRegistryServiceUpdateResponse, error) {
	if req.GetGroup() == nil {
		return nil, missing("group")
	}
	if _, err := g.store.Update(ctx, req.GetGroup()); err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.GroupRegistryServiceUpdateResponse{}, nil
}

func (g *groupServer) Delete(ctx context.Context, req *databasev1.GroupRegistryServiceDeleteRequest) (*databasev1.GroupRegistryServiceDeleteResponse, error) {
	info, err := g.store.DeleteGroup(ctx, req.GetGroup(), registry.DeleteGroupOptions{
		DryRun: req.GetDryRun(), Force: req.GetForce(), DataOnly: req.GetDataOnly(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.GroupRegistryServiceDeleteResponse{SchemaInfo: info}, nil
}

func (g *groupServer) Get(ctx context.Context, req *databasev1.GroupRegistryServiceGetRequest) (*databasev1.GroupRegistryServiceGetResponse, error) {
	obj, err := g.store.Get(ctx, registry.GroupKey(req.GetGroup()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.GroupRegistryServiceGetResponse{Group: obj.Message.(*commonv1.Group)}, nil
}

func (g *groupServer) List(ctx context.Context, _ *databasev1.GroupRegistryServiceListRequest) (*databasev1.GroupRegistryServiceListResponse, error) {
	objs, err := g.store.List(ctx, registry.KindGroup, "")
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &databasev1.GroupRegistryServiceListResponse{Group: make([]*commonv1.Group, 0, len(objs))}
	for _, o := range objs {
		resp.Group = append(resp.Group, o.Message.(*commonv1.Group))
	}
	return resp, nil
}

func (g *groupServer) Exist(ctx context.Context, req *databasev1.GroupRegistryServiceExistRequest) (*databasev1.GroupRegistryServiceExistResponse, error) {
	k := registry.GroupKey(req.GetGroup())
	if err := registry.ValidateKey(k); err != nil {
		return nil, toStatus(err)
	}
	_, err := g.store.Get(ctx, k)
	switch {
	case err == nil:
		return &databasev1.GroupRegistryServiceExistResponse{HasGroup: true}, nil
	case isNotFound(err):
		return &databasev1.GroupRegistryServiceExistResponse{}, nil
	}
	return nil, toStatus(err)
}
