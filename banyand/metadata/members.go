package metadata

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

func isNotFound(err error) bool { return errors.Is(err, registry.ErrNotFound) }

// members serves the registry methods of one kind that lives in a group;
// each service below is a thin layer of request and response types over it.
type members[T proto.Message] struct {
	store Store
	kind  registry.Kind
	// field is the request field that carries the object, for errors.
	field string
}

// key turns request metadata into a key, or InvalidArgument.
func (s members[T]) key(md *commonv1.Metadata) (registry.Key, error) {
	if md == nil {
		return registry.Key{}, missing("metadata")
	}
	k := registry.Key{Kind: s.kind, Group: md.GetGroup(), Name: md.GetName()}
	if err := registry.ValidateKey(k); err != nil {
		return registry.Key{}, toStatus(err)
	}
	return k, nil
}

func (s members[T]) create(ctx context.Context, m T) (int64, error) {
	if !m.ProtoReflect().IsValid() {
		return 0, missing(s.field)
	}
	rev, err := s.store.Create(ctx, m)
	return rev, toStatus(err)
}

func (s members[T]) update(ctx context.Context, m T) (int64, error) {
	if !m.ProtoReflect().IsValid() {
		return 0, missing(s.field)
	}
	rev, err := s.store.Update(ctx, m)
	return rev, toStatus(err)
}

func (s members[T]) delete(ctx context.Context, md *commonv1.Metadata) error {
	k, err := s.key(md)
	if err != nil {
		return err
	}
	_, err = s.store.Delete(ctx, k)
	return toStatus(err)
}

func (s members[T]) get(ctx context.Context, md *commonv1.Metadata) (T, error) {
	var zero T
	k, err := s.key(md)
	if err != nil {
		return zero, err
	}
	obj, err := s.store.Get(ctx, k)
	if err != nil {
		return zero, toStatus(err)
	}
	return obj.Message.(T), nil
}

// list lists a group's members of the kind; NotFound if the group itself
// does not exist.
func (s members[T]) list(ctx context.Context, group string) ([]T, error) {
	if group == "" {
		return nil, missing("group")
	}
	if _, err := s.store.Get(ctx, registry.GroupKey(group)); err != nil {
		return nil, toStatus(err)
	}
	objs, err := s.store.List(ctx, s.kind, group)
	if err != nil {
		return nil, toStatus(err)
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Message.(T))
	}
	return out, nil
}

// exist answers the Exist RPCs: a missing group or object is an answer,
// not an error.
func (s members[T]) exist(ctx context.Context, md *commonv1.Metadata) (hasGroup, hasObject bool, err error) {
	k, err := s.key(md)
	if err != nil {
		return false, false, err
	}
	if _, err := s.store.Get(ctx, registry.GroupKey(k.Group)); err != nil {
		if isNotFound(err) {
			return false, false, nil
		}
		return false, false, toStatus(err)
	}
	if _, err := s.store.Get(ctx, k); err != nil {
		if isNotFound(err) {
			return true, false, nil
		}
		return false, false, toStatus(err)
	}
	return true, true, nil
}

type streamServer struct {
	databasev1.UnimplementedStreamRegistryServiceServer
	members[*databasev1.Stream]
}

func (s *streamServer) Create(ctx context.Context, req *databasev1.StreamRegistryServiceCreateRequest) (*databasev1.StreamRegistryServiceCreateResponse, error) {
	rev, err := s.create(ctx, req.GetStream())
	if err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceCreateResponse{ModRevision: rev}, nil
}

func (s *streamServer) Update(ctx context.Context, req *databasev1.StreamRegistryServiceUpdateRequest) (*databasev1.StreamRegistryServiceUpdateResponse, error) {
	rev, err := s.update(ctx, req.GetStream())
	if err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceUpdateResponse{ModRevision: rev}, nil
}

func (s *streamServer) Delete(ctx context.Context, req *databasev1.StreamRegistryServiceDeleteRequest) (*databasev1.StreamRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *streamServer) Get(ctx context.Context, req *databasev1.StreamRegistryServiceGetRequest) (*databasev1.StreamRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceGetResponse{Stream: m}, nil
}

func (s *streamServer) List(ctx context.Context, req *databasev1.StreamRegistryServiceListRequest) (*databasev1.StreamRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceListResponse{Stream: l}, nil
}

func (s *streamServer) Exist(ctx context.Context, req *databasev1.StreamRegistryServiceExistRequest) (*databasev1.StreamRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.StreamRegistryServiceExistResponse{HasGroup: g, HasStream: ok}, nil
}

type measureServer struct {
	databasev1.UnimplementedMeasureRegistryServiceServer
	members[*databasev1.Measure]
}

func (s *measureServer) Create(ctx context.Context, req *databasev1.MeasureRegistryServiceCreateRequest) (*databasev1.MeasureRegistryServiceCreateResponse, error) {
	rev, err := s.create(ctx, req.GetMeasure())
	if err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceCreateResponse{ModRevision: rev}, nil
}

func (s *measureServer) Update(ctx context.Context, req *databasev1.MeasureRegistryServiceUpdateRequest) (*databasev1.MeasureRegistryServiceUpdateResponse, error) {
	rev, err := s.update(ctx, req.GetMeasure())
	if err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceUpdateResponse{ModRevision: rev}, nil
}

func (s *measureServer) Delete(ctx context.Context, req *databasev1.MeasureRegistryServiceDeleteRequest) (*databasev1.MeasureRegistryServiceDeleteResponse, error) {
	if err := s.delete(ctx, req.GetMetadata()); err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceDeleteResponse{Deleted: true}, nil
}

func (s *measureServer) Get(ctx context.Context, req *databasev1.MeasureRegistryServiceGetRequest) (*databasev1.MeasureRegistryServiceGetResponse, error) {
	m, err := s.get(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceGetResponse{Measure: m}, nil
}

func (s *measureServer) List(ctx context.Context, req *databasev1.MeasureRegistryServiceListRequest) (*databasev1.MeasureRegistryServiceListResponse, error) {
	l, err := s.list(ctx, req.GetGroup())
	if err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceListResponse{Measure: l}, nil
}

func (s *measureServer) Exist(ctx context.Context, req *databasev1.MeasureRegistryServiceExistRequest) (*databasev1.MeasureRegistryServiceExistResponse, error) {
	g, ok, err := s.exist(ctx, req.GetMetadata())
	if err != nil {
		return nil, err
	}
	return &databasev1.MeasureRegistryServiceExistResponse{HasGroup: g, HasMeasure: ok}, nil
}
