package etcd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
)

// With etcd's authentication on, --etcd-username and --etcd-password-file
// log in; a wrong password is refused.
func TestClientUserPassword(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := srv.Client()
	for _, step := range []func() error{
		func() error { _, err := admin.RoleAdd(ctx, "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "root", "s3cret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	password := func(p string) string {
		path := filepath.Join(dir, p)
		if err := os.WriteFile(path, []byte(p+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := ClientConfig{Endpoints: []string{srv.Endpoint()}, DialTimeout: 5 * time.Second, Namespace: DefaultNamespace,
		Username: "root", PasswordFile: password("s3cret")}
	if err := roundTrip(t, cfg, 30*time.Second); err != nil {
		t.Fatalf("with the right password: %v", err)
	}
	// The client logs in while it is created, so a wrong password fails
	// NewClient and with it the role's start.
	cfg.PasswordFile = password("guess")
	cli, err := NewClient(cfg)
	if err == nil {
		_ = cli.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("with a wrong password: %v, want authentication failed", err)
	}
}
