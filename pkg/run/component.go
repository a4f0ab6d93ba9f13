package run

import (
	"context"

	"github.com/spf13/pflag"
)

// Component is anything a Group manages. Its name appears in logs and
// errors and must be unique within the group. Everything else is optional:
// the Group checks for the interfaces below with type assertions.
type Component interface {
	Name() string
}

// FlagRegisterer is implemented by components with command-line settings.
// RegisterFlags binds flags to the component's config; values are read
// after parsing, in Validate and Start, never in RegisterFlags itself.
type FlagRegisterer interface {
	RegisterFlags(fs *pflag.FlagSet)
}

// Validator is implemented by components whose config can be wrong. It is
// called after flags are parsed and before anything starts, so a bad flag
// fails the process before it touches disks or ports.
type Validator interface {
	Validate() error
}

// Starter is implemented by components that must be ready before the next
// component starts: open a store, bind a listener, load a schema. Start runs
// synchronously, in group order. ctx bounds the start only and is cancelled
// if the process is told to stop meanwhile; work that outlives Start must be
// ended by Stop, not by ctx. A component whose Start fails must release what
// it acquired itself: it is not stopped.
type Starter interface {
	Start(ctx context.Context) error
}

// Service is implemented by components that do their work in a long-running
// loop. Serve runs on its own goroutine after Start (if any) has returned.
// It must return when ctx is cancelled, with nil or ctx's error; returning
// earlier, even with nil, is a failure that stops the whole group.
type Service interface {
	Serve(ctx context.Context) error
}

// Stopper is implemented by components that need a graceful stop: stop
// taking new work, drain what is in flight, release resources. Stop must
// give up and return when ctx's deadline passes. For a Service, Stop is
// called before Serve's ctx is cancelled, so it can drain first; a
// component with no Stopper is stopped by cancelling Serve's ctx alone.
type Stopper interface {
	Stop(ctx context.Context) error
}
