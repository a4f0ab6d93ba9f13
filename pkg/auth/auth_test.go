package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/auth"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func bcryptHash(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func writeFile(t *testing.T, path, content string, bump time.Duration) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(bump)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// policy: health Check needs write, List is open, Watch needs read.
func policy(method string) (auth.Scope, bool) {
	switch method {
	case "/grpc.health.v1.Health/List":
		return "", true
	case "/grpc.health.v1.Health/Watch":
		return auth.ScopeRead, false
	}
	return auth.ScopeWrite, false
}

// serve runs the health service behind a's interceptors.
func serve(t *testing.T, a *auth.Authenticator) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(a.UnaryInterceptor()), grpc.StreamInterceptor(a.StreamInterceptor()))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return healthpb.NewHealthClient(conn)
}

func check(c healthpb.HealthClient, authorization string) codes.Code {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if authorization != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authorization)
	}
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	return status.Code(err)
}

func TestInterceptors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.yaml")
	writeFile(t, path, fmt.Sprintf(`
tokens:
  - {name: ingest, sha256: %s, scopes: [write]}
  - {name: dashboard, sha256: %s, scopes: [read]}
users:
  - {name: alice, password_hash: "%s", scopes: [read, write]}
  - {name: bob, password_hash: "sha256:%s", scopes: [write]}
`, sha("ingest-secret"), sha("dash-secret"), bcryptHash(t, "alice-pw"), sha("bob-pw")), 0)
	a, err := auth.New(auth.Config{File: path, Policy: policy}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, a)
	for _, tc := range []struct {
		name, header string
		want         codes.Code
	}{
		{"no credentials", "", codes.Unauthenticated},
		{"unknown token", "Bearer nope", codes.Unauthenticated},
		{"empty bearer", "Bearer ", codes.Unauthenticated},
		{"unknown scheme", "Digest abc", codes.Unauthenticated},
		{"good token", "Bearer ingest-secret", codes.OK},
		{"scheme is case-insensitive", "bearer ingest-secret", codes.OK},
		{"token without the scope", "Bearer dash-secret", codes.PermissionDenied},
		{"bcrypt user", basic("alice", "alice-pw"), codes.OK},
		{"bcrypt user again (cached)", basic("alice", "alice-pw"), codes.OK},
		{"bcrypt user, wrong password", basic("alice", "alice-pw2"), codes.Unauthenticated},
		{"sha256 user", basic("bob", "bob-pw"), codes.OK},
		{"sha256 user, wrong password", basic("bob", "x"), codes.Unauthenticated},
		{"unknown user", basic("carol", "bob-pw"), codes.Unauthenticated},
		{"basic not base64", "Basic !!!", codes.Unauthenticated},
		{"password used as token", "Bearer bob-pw", codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := check(c, tc.header); got != tc.want {
				t.Fatalf("code %s, want %s", got, tc.want)
			}
		})
	}
	// BanyanDB's own credentials: gRPC metadata username and password.
	for _, tc := range []struct {
		name string
		md   []string
		want codes.Code
	}{
		{"username and password", []string{"username", "alice", "password", "alice-pw"}, codes.OK},
		{"username, wrong password", []string{"username", "alice", "password", "nope"}, codes.Unauthenticated},
		{"username without password", []string{"username", "alice"}, codes.Unauthenticated},
		{"two usernames", []string{"username", "alice", "username", "bob", "password", "alice-pw"}, codes.Unauthenticated},
		{"sha256 user by username", []string{"username", "bob", "password", "bob-pw"}, codes.OK},
		{"token wins over username", []string{"authorization", "Bearer dash-secret", "username", "alice", "password", "alice-pw"}, codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Check(metadata.AppendToOutgoingContext(ctx, tc.md...), &healthpb.HealthCheckRequest{})
			if got := status.Code(err); got != tc.want {
				t.Fatalf("code %s, want %s (%v)", got, tc.want, err)
			}
		})
	}
	t.Run("open method needs nothing", func(t *testing.T) {
		if _, err := c.List(context.Background(), &healthpb.HealthListRequest{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("streams are checked when they open", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("watch without credentials: %v, want Unauthenticated", err)
		}
		w, err = c.Watch(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer dash-secret"), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatalf("watch with a read token: %v", err)
		}
	})
	if s := a.Stats(); s.Unauthenticated == 0 || s.Denied != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.yaml")
	writeFile(t, path, "tokens: [{name: old, sha256: "+sha("old")+", scopes: [write]}]\n", 0)
	a, err := auth.New(auth.Config{File: path, Policy: policy, CheckInterval: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, a)
	if got := check(c, "Bearer old"); got != codes.OK {
		t.Fatalf("old token: %s", got)
	}
	writeFile(t, path, "tokens: [{name: new, sha256: "+sha("new")+", scopes: [write]}]\n", time.Second)
	poll.Until(t, "the new token is accepted", func() bool { return check(c, "Bearer new") == codes.OK })
	if got := check(c, "Bearer old"); got != codes.Unauthenticated {
		t.Fatalf("revoked token: %s, want Unauthenticated", got)
	}

	writeFile(t, path, "tokens: [{name: broken, scopes: [write]}]\n", 2*time.Second)
	poll.Until(t, "the broken file is refused", func() bool {
		_ = check(c, "Bearer new")
		return a.Stats().ReloadFailures == 1
	})
	if got := check(c, "Bearer new"); got != codes.OK {
		t.Fatalf("after a broken file the loaded token: %s, want OK", got)
	}
}

func TestFileValidation(t *testing.T) {
	dir := t.TempDir()
	good := sha("x")
	for _, tc := range []struct{ name, content, want string }{
		{"empty", "", "no tokens and no users"},
		{"unknown field", "tokens: [{name: a, sha256: " + good + ", scopes: [read], token: plain}]", "unknown field"},
		{"no name", "tokens: [{sha256: " + good + ", scopes: [read]}]", "name is required"},
		{"duplicate name", "tokens: [{name: a, sha256: " + good + ", scopes: [read]}]\nusers: [{name: a, password_hash: 'sha256:" + good + "', scopes: [read]}]", "used twice"},
		{"no scopes", "tokens: [{name: a, sha256: " + good + "}]", "no scopes"},
		{"unknown scope", "tokens: [{name: a, sha256: " + good + ", scopes: [admin]}]", "unknown scope"},
		{"short hash", "tokens: [{name: a, sha256: abc, scopes: [read]}]", "64 hex digits"},
		{"plain password", "users: [{name: a, password_hash: hunter2, scopes: [read]}]", "bcrypt hash"},
		{"bad bcrypt", "users: [{name: a, password_hash: '$2y$xx', scopes: [read]}]", "password_hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			writeFile(t, path, tc.content, 0)
			err := auth.Check(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := auth.Check(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: %v", err)
	}
}
