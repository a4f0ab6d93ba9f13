package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Errors of Authenticate.
var (
	ErrNoCredentials  = errors.New("no credentials")
	ErrBadCredentials = errors.New("invalid credentials")
)

// DefaultCheckInterval is how often the auth file is looked at.
const DefaultCheckInterval = time.Second

// Policy says which scope a gRPC method needs; open methods need no
// credentials at all.
type Policy func(fullMethod string) (need Scope, open bool)

// Config configures an Authenticator.
type Config struct {
	// File is the auth file (see File for its layout).
	File string
	// Policy maps methods to scopes.
	Policy Policy
	// CheckInterval is the least time between two looks at the file.
	// Default 1s.
	CheckInterval time.Duration
}

// Stats are an Authenticator's counters.
type Stats struct {
	Unauthenticated int64 // calls refused for missing or invalid credentials
	Denied          int64 // calls refused for a missing scope
	Reloads         int64 // changed files applied
	ReloadFailures  int64 // changed files refused (the old one stayed)
}

// Authenticator checks calls against the auth file. It re-reads the file
// when its size or modification time changes, at most once per
// CheckInterval, on the next call; a file that does not parse is refused
// with an error log and the previous one stays in force.
type Authenticator struct {
	cfg    Config
	logger *slog.Logger

	table    atomic.Pointer[table]
	unauth   atomic.Int64
	denied   atomic.Int64
	reloads  atomic.Int64
	failures atomic.Int64

	mu        sync.Mutex // guards the file check below
	lastCheck time.Time
	size      int64
	mod       time.Time
}

// New reads the file; it starts nothing. A nil logger discards logs.
func New(cfg Config, logger *slog.Logger) (*Authenticator, error) {
	if cfg.Policy == nil {
		return nil, errors.New("auth: a policy is required")
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Authenticator{cfg: cfg, logger: logger}
	fi, err := os.Stat(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	t, err := readFile(cfg.File)
	if err != nil {
		return nil, err
	}
	a.size, a.mod, a.lastCheck = fi.Size(), fi.ModTime(), time.Now()
	a.table.Store(t)
	return a, nil
}

// Check parses an auth file, for validating configuration.
func Check(path string) error {
	_, err := readFile(path)
	return err
}

// Stats returns the counters.
func (a *Authenticator) Stats() Stats {
	return Stats{Unauthenticated: a.unauth.Load(), Denied: a.denied.Load(),
		Reloads: a.reloads.Load(), ReloadFailures: a.failures.Load()}
}

// Authenticate checks an authorization header value: "Bearer <token>" or
// "Basic <base64 user:password>".
func (a *Authenticator) Authenticate(authorization string) (Identity, error) {
	a.maybeReload(time.Now())
	t := a.table.Load()
	scheme, cred, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	cred = strings.TrimSpace(cred)
	switch {
	case authorization == "":
		return Identity{}, ErrNoCredentials
	case strings.EqualFold(scheme, "bearer") && cred != "":
		if id, ok := t.token(cred); ok {
			return id, nil
		}
	case strings.EqualFold(scheme, "basic"):
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return Identity{}, fmt.Errorf("%w: basic credentials are not base64", ErrBadCredentials)
		}
		name, password, ok := strings.Cut(string(raw), ":")
		if !ok {
			return Identity{}, fmt.Errorf("%w: basic credentials are not user:password", ErrBadCredentials)
		}
		return a.authenticateUser(t, name, password)
	default:
		return Identity{}, fmt.Errorf("%w: want 'Bearer <token>' or 'Basic <user:password in base64>'", ErrBadCredentials)
	}
	return Identity{}, ErrBadCredentials
}

// AuthenticateUser checks a user name and password, as BanyanDB clients
// send them (gRPC metadata "username" and "password").
func (a *Authenticator) AuthenticateUser(name, password string) (Identity, error) {
	a.maybeReload(time.Now())
	return a.authenticateUser(a.table.Load(), name, password)
}

func (a *Authenticator) authenticateUser(t *table, name, password string) (Identity, error) {
	if id, ok := t.user(name, password); ok {
		return id, nil
	}
	return Identity{}, ErrBadCredentials
}

// credentials authenticates a call's metadata: an authorization header
// ("Bearer <token>" or basic auth), or BanyanDB's "username" and
// "password" entries when there is no header.
func (a *Authenticator) credentials(md metadata.MD) (Identity, error) {
	vals := md.Get("authorization")
	users, passwords := md.Get("username"), md.Get("password")
	switch {
	case len(vals) > 1:
		return Identity{}, fmt.Errorf("%w: more than one authorization header", ErrBadCredentials)
	case len(vals) == 1:
		return a.Authenticate(vals[0])
	case len(users) == 0 && len(passwords) == 0:
		return Identity{}, ErrNoCredentials
	case len(users) != 1 || len(passwords) != 1:
		return Identity{}, fmt.Errorf("%w: send one username and one password", ErrBadCredentials)
	}
	return a.AuthenticateUser(users[0], passwords[0])
}

// authorize checks a call's metadata for method and returns the gRPC
// error to answer with, or nil.
func (a *Authenticator) authorize(ctx context.Context, method string) error {
	need, open := a.cfg.Policy(method)
	if open {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	id, err := a.credentials(md)
	switch {
	case errors.Is(err, ErrNoCredentials):
		a.unauth.Add(1)
		return status.Error(codes.Unauthenticated, "credentials required: send 'authorization: Bearer <token>', basic auth, or 'username' and 'password'")
	case err != nil:
		a.unauth.Add(1)
		return status.Error(codes.Unauthenticated, err.Error())
	case !id.Allows(need):
		a.denied.Add(1)
		return status.Errorf(codes.PermissionDenied, "%q may not call %s: it needs the %q scope", id.Name, method, need)
	}
	return nil
}

// UnaryInterceptor refuses unary calls without the credentials they need.
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := a.authorize(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor refuses streams without the credentials they need;
// a stream is checked once, when it opens.
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := a.authorize(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

func (a *Authenticator) maybeReload(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.lastCheck) < a.cfg.CheckInterval {
		return
	}
	a.lastCheck = now
	fi, err := os.Stat(a.cfg.File)
	if err != nil {
		if a.size != -1 {
			a.logger.Error("auth file unreadable; keeping the credentials loaded before", "err", err)
			a.size = -1
		}
		return
	}
	if fi.Size() == a.size && fi.ModTime().Equal(a.mod) {
		return
	}
	a.size, a.mod = fi.Size(), fi.ModTime()
	t, err := readFile(a.cfg.File)
	if err != nil {
		a.failures.Add(1)
		a.logger.Error("changed auth file refused; keeping the credentials loaded before", "err", err)
		return
	}
	a.table.Store(t)
	a.reloads.Add(1)
	a.logger.Info("auth file reloaded", "file", a.cfg.File, "tokens", len(t.tokens), "users", len(t.users))
}
