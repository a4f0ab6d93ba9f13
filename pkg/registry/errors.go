package registry

import (
	"errors"
	"fmt"
)

// Errors callers branch on; test for them with errors.Is. The gRPC edge maps
// them to status codes (banyand/metadata).
var (
	// ErrNotFound: the object asked for does not exist.
	ErrNotFound = errors.New("registry: not found")
	// ErrAlreadyExists: Create found an object under the same key.
	ErrAlreadyExists = errors.New("registry: already exists")
	// ErrInvalidArgument: the object is malformed; the error is an
	// *InvalidArgumentError naming the field.
	ErrInvalidArgument = errors.New("registry: invalid argument")
	// ErrFailedPrecondition: the object is well formed but the registry's
	// state refuses it (group of the wrong catalog, non-empty group delete).
	ErrFailedPrecondition = errors.New("registry: failed precondition")
	// ErrGroupNotFound: a stream or measure names a group that does not
	// exist. It is also an ErrFailedPrecondition.
	ErrGroupNotFound = fmt.Errorf("group not found: %w", ErrFailedPrecondition)
	// ErrUnimplemented: the request asks for something banyand does not do
	// (group delete with data_only).
	ErrUnimplemented = errors.New("registry: unimplemented")
)

// InvalidArgumentError names the field of a schema object that is wrong and
// why. It wraps ErrInvalidArgument.
type InvalidArgumentError struct {
	// Field is the proto path of the bad field, e.g.
	// "stream.entity.tag_names[1]".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("invalid argument: %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidArgument) hold.
func (e *InvalidArgumentError) Unwrap() error { return ErrInvalidArgument }

func invalid(field, format string, args ...any) error {
	return &InvalidArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
