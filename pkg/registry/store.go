package registry

import (
	"context"

	"google.golang.org/protobuf/proto"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Reader reads schema objects.
type Reader interface {
	// Get returns the object with key k, or ErrNotFound.
	Get(ctx context.Context, k Key) (Object, error)
	// List returns the objects of a kind sorted by key. For streams and
	// measures group narrows the list to one group ("" lists all); it is
	// ignored for groups.
	List(ctx context.Context, kind Kind, group string) ([]Object, error)
}

// Writer changes schema objects. Every write is validated (Validate) and
// stamped with the store's revision and updated_at.
type Writer interface {
	// Create stores a new group, stream or measure and returns its revision.
	// ErrAlreadyExists if the key is taken; ErrGroupNotFound or
	// ErrFailedPrecondition if a stream or measure has no group of its
	// catalog; an *InvalidArgumentError if it is malformed.
	Create(ctx context.Context, m proto.Message) (int64, error)
	// Update replaces an existing object (ErrNotFound if there is none) and
	// returns its new revision. A group's catalog cannot change.
	Update(ctx context.Context, m proto.Message) (int64, error)
	// Delete removes one object and returns the revision of the delete;
	// ErrNotFound if there was nothing to delete. Deleting a group this way
	// is DeleteGroup without options.
	Delete(ctx context.Context, k Key) (int64, error)
}

// DeleteGroupOptions mirror GroupRegistryServiceDeleteRequest.
type DeleteGroupOptions struct {
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Force deletes the group's streams and measures with it, in one atomic
	// write. Without it a non-empty group is refused.
	Force bool
	// DataOnly (drop data, keep schema) is not supported: ErrUnimplemented.
	DataOnly bool
}

// GroupDeleter deletes groups with BanyanDB's semantics.
type GroupDeleter interface {
	// DeleteGroup returns the streams and measures deleted with the group
	// (or that would be, for a dry run). ErrNotFound if the group does not
	// exist; ErrFailedPrecondition naming the members if it is not empty
	// and Force is not set; ErrUnimplemented for DataOnly.
	DeleteGroup(ctx context.Context, name string, opts DeleteGroupOptions) (*databasev1.SchemaInfo, error)
}

// EventType says whether an event stores or removes an object.
type EventType int

// Event types.
const (
	EventPut EventType = iota + 1
	EventDelete
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "put"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// Event is one change. For EventDelete, Object.Revision is the revision of
// the delete and Object.Message the last stored value when the store knows
// it (it may be nil).
type Event struct {
	Type   EventType
	Object Object
}

// Handler receives what a watch sees. Its methods are called serially from
// the watching goroutine, never concurrently; a slow handler delays the
// watch (and, for the local store, may cost it a resync), never the writers.
type Handler interface {
	// Reset replaces everything the handler knows with objs, the complete
	// state at revision rev. It is called first, and again whenever the
	// watch had to re-list (compaction, lost stream, slow consumer).
	Reset(objs []Object, rev int64)
	// Apply applies the events of one revision, in increasing revision
	// order after the last Reset. A forced group delete arrives as one
	// Apply holding the deletes of the group and all its members.
	Apply(rev int64, events []Event)
}

// Watcher delivers the schema to a Handler as it changes.
type Watcher interface {
	// Watch calls h.Reset with a consistent snapshot, then h.Apply for each
	// later revision, until ctx is done; it then returns ctx.Err(). Errors
	// talking to the backend are retried (with a fresh Reset), not returned.
	Watch(ctx context.Context, h Handler) error
}

// SchemaStore is everything a schema registry does. Consumers should ask
// for the smallest of the interfaces above that they need.
type SchemaStore interface {
	Reader
	Writer
	GroupDeleter
	Watcher
}
