// Package metadata serves BanyanDB's schema registry gRPC services
// (GroupRegistryService, StreamRegistryService, MeasureRegistryService) on
// top of a registry store. It is the wire edge: registry errors become gRPC
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

// Service implements the three registry services over one Store.
type Service struct {
	store Store
}

// New returns the services over store.
func New(store Store) *Service { return &Service{store: store} }

// Register registers all three services on s.
func (svc *Service) Register(s *grpc.Server) {
	databasev1.RegisterGroupRegistryServiceServer(s, &groupServer{store: svc.store})
	databasev1.RegisterStreamRegistryServiceServer(s, &streamServer{store: svc.store})
	databasev1.RegisterMeasureRegistryServiceServer(s, &measureServer{store: svc.store})
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

// exist answers the Exist RPCs: a missing group or object is an answer,
// not an error.
func exist(ctx context.Context, store registry.Reader, k registry.Key) (hasGroup, hasObject bool, err error) {
	if err := registry.ValidateKey(k); err != nil {
		return false, false, toStatus(err)
	}
	if _, err := store.Get(ctx, registry.GroupKey(k.Group)); err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return false, false, nil
		}
		return false, false, toStatus(err)
	}
	if _, err := store.Get(ctx, k); err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return true, false, nil
		}
		return false, false, toStatus(err)
	}
	return true, true, nil
}

// listMembers lists a group's streams or measures; NotFound if the group
// itself does not exist.
func listMembers(ctx context.Context, store registry.Reader, kind registry.Kind, group string) ([]registry.Object, error) {
	if group == "" {
		return nil, missing("group")
	}
	if _, err := store.Get(ctx, registry.GroupKey(group)); err != nil {
		return nil, toStatus(err)
	}
	objs, err := store.List(ctx, kind, group)
	return objs, toStatus(err)
}
