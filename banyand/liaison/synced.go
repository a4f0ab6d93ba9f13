package liaison

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/registry"
)

// SchemaWriter is the part of a schema store whose changes a client may
// rely on at once.
type SchemaWriter interface {
	registry.Reader
	registry.Writer
	registry.GroupDeleter
}

// maxSchemaSync bounds how long a schema change waits for this liaison's
// cache; the change is stored either way.
const maxSchemaSync = 5 * time.Second

// ReadYourWrites wraps store so that a Create, Update or Delete returns
// only once this liaison's cache has seen it: a client that creates a
// stream and writes to it right away is not told NOT_FOUND.
func ReadYourWrites(store SchemaWriter, cache *schema.Cache) SchemaWriter {
	return &syncedStore{SchemaWriter: store, cache: cache}
}

type syncedStore struct {
	SchemaWriter
	cache *schema.Cache
}

func (s *syncedStore) wait(ctx context.Context, rev int64, err error) (int64, error) {
	if err != nil {
		return rev, err
	}
	ctx, cancel := context.WithTimeout(ctx, maxSchemaSync)
	defer cancel()
	_ = s.cache.WaitRevision(ctx, rev) // on timeout the change is stored, just not seen here yet
	return rev, nil
}

func (s *syncedStore) Create(ctx context.Context, m proto.Message) (int64, error) {
	rev, err := s.SchemaWriter.Create(ctx, m)
	return s.wait(ctx, rev, err)
}

func (s *syncedStore) Update(ctx context.Context, m proto.Message) (int64, error) {
	rev, err := s.SchemaWriter.Update(ctx, m)
	return s.wait(ctx, rev, err)
}

func (s *syncedStore) Delete(ctx context.Context, k registry.Key) (int64, error) {
	rev, err := s.SchemaWriter.Delete(ctx, k)
	return s.wait(ctx, rev, err)
}
