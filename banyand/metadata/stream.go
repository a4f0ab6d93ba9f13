package metadata

import (
	"context"
	"errors"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

func isNotFound(err error) bool { return errors.Is(err, registry.ErrNotFound) }

// memberKey turns request metadata into a key, or InvalidArgument.
func memberKey(kind registry.Kind, md *commonv1.Metadata) (registry.Key, error) {
	if md == nil {
		return registry.Key{}, missing("metadata")
	}
	k := registry.Key{Kind: kind, Group: md.GetGroup(), Name: md.GetName()}
	if err := registry.ValidateKey(k); err != nil {
		return registry.Key{}, toStatus(err)
	}
	return k, nil
}

type streamServer struct {
	databasev1.UnimplementedStreamRegistryServiceServer
	store Store
}

func (s *streamServer) Create(ctx context.Context, req *databasev1.StreamRegistryServiceCreateRequest) (*databasev1.StreamRegistryServiceCreateResponse, error) {
	if req.GetStream() == nil {
		return nil, missing("stream")
	}
	rev, err := s.store.Create(ctx, req.GetStream())
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.StreamRegistryServiceCreateResponse{ModRevision: rev}, nil
}

func (s *streamServer) Update(ctx context.Context, req *databasev1.StreamRegistryServiceUpdateRequest) (*databasev1.StreamRegistryServiceUpdateResponse, error) {
	if req.GetStream() == nil {
		return nil, missing("stream")
	}
	rev, err := s.store.Update(ctx, req.GetStream())
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.StreamRegistryServiceUpdateResponse{ModRevision: rev}, nil
}

func (s *streamServer) Delete(ctx context.Context, req *databasev1.StreamRegistryServiceDeleteRequest) (*databasev1.StreamRegistryServiceDeleteResponse, error) {
	k, err := memberKey(registry.KindStream, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	if _, err := s.store.Delete(ctx, k); err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.StreamRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *streamServer) Get(ctx context.Context, req *databasev1.StreamRegistryServiceGetRequest) (*databasev1.StreamRegistryServiceGetResponse, error) {
	k, err := memberKey(registry.KindStream, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	obj, err := s.store.Get(ctx, k)
	if err != nil {
		return nil, toStatus(err)
	}
	return &databasev1.StreamRegistryServiceGetResponse{Stream: obj.Message.(*databasev1.Stream)}, nil
}

func (s *streamServer) List(ctx context.Context, req *databasev1.StreamRegistryServiceListRequest) (*databasev1.StreamRegistryServiceListResponse, error) {
	objs, err := listMembers(ctx, s.store, registry.KindStream, req.GetGroup())
	if err != nil {
		return nil, err
	}
	resp := &databasev1.StreamRegistryServiceListResponse{Stream: make([]*databasev1.Stream, 0, len(objs))}
	for _, o := range objs {
		resp.Stream = append(resp.Stream, o.Message.(*databasev1.Stream))
	}
	return resp, nil
}

func (s *streamServer) Exist(ctx context.Context, req *databasev1.StreamRegistryServiceExistRequest) (*databasev1.StreamRegistryServiceExistResponse, error) {
	k, err := memberKey(registry.KindStream, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	hasGroup, hasStream, err := exist(ctx, s.store, k)
	if err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceExistResponse{HasGroup: hasGroup, HasStream: hasStream}, nil
}
