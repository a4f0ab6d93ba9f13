package test

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// The HTTP API asks for the same credentials and scopes as gRPC: none is
// 401, a missing scope 403, and every way BanyanDB's clients send them
// works (bearer token, basic auth as bydbctl sends it, BanyanDB's
// username and password metadata). Health needs none.
func TestHTTPAPIAuth(t *testing.T) {
	dir := t.TempDir()
	sa, _ := startHTTPStandalone(t, func(s *roles.Standalone) {
		s.SetClientSecurity(security.ClientSecurity{AuthFile: writeAuthFile(t, dir)})
	})
	api := newHTTPAPI(t, "http://"+sa.HTTPBoundAddr(), nil)
	waitReady(t, api)
	checkHTTPAuth(t, api)
}

func checkHTTPAuth(t *testing.T, api *httpAPI) {
	t.Helper()
	if got := string(api.ok(http.MethodGet, "/api/healthz", nil, nil)); got != "SERVING" {
		t.Fatalf("healthz without credentials: %q", got)
	}
	group := func(name string) *databasev1.GroupRegistryServiceCreateRequest {
		return &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
			Metadata: &commonv1.Metadata{Name: name}, Catalog: commonv1.Catalog_CATALOG_STREAM, ResourceOpts: &commonv1.ResourceOpts{ShardNum: 1},
		}}
	}
	const unauthenticated, permissionDenied = 16, 7

	api.fails(http.MethodGet, "/api/v1/group/schema/lists", nil, http.StatusUnauthorized, unauthenticated)
	api.fails(http.MethodPost, "/api/v1/group/schema", group("g0"), http.StatusUnauthorized, unauthenticated)
	api.with("Authorization", "Bearer wrong").fails(http.MethodGet, "/api/v1/group/schema/lists", nil, http.StatusUnauthorized, unauthenticated)
	api.with("Authorization", basicAuth("ops", "wrong")).fails(http.MethodGet, "/api/v1/group/schema/lists", nil, http.StatusUnauthorized, unauthenticated)

	for i, admin := range []*httpAPI{
		api.with("Authorization", "Bearer "+adminToken),
		api.with("Authorization", basicAuth("ops", "ops-pw")),
		api.with("Grpc-Metadata-Username", "ops").with("Grpc-Metadata-Password", "ops-pw"),
	} {
		admin.ok(http.MethodPost, "/api/v1/group/schema", group(fmt.Sprintf("g%d", i)), nil)
	}
	for _, reader := range []*httpAPI{
		api.with("Authorization", "Bearer "+readerToken),
		api.with("Authorization", basicAuth("viewer", "viewer-pw")),
		api.with("Grpc-Metadata-Username", "viewer").with("Grpc-Metadata-Password", "viewer-pw"),
	} {
		var l databasev1.GroupRegistryServiceListResponse
		reader.ok(http.MethodGet, "/api/v1/group/schema/lists", nil, &l)
		if len(l.GetGroup()) != 3 {
			t.Fatalf("reader lists %d groups, want 3", len(l.GetGroup()))
		}
		reader.fails(http.MethodPost, "/api/v1/group/schema", group("g9"), http.StatusForbidden, permissionDenied)
		reader.fails(http.MethodDelete, "/api/v1/group/schema/g0", nil, http.StatusForbidden, permissionDenied)
	}
}

// With --tls the HTTP port serves TLS with the client API's certificate,
// /api among the rest, and the gateway reaches its gRPC server over TLS.
func TestHTTPAPIOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "banyand test CA")
	cert, key := ca.IssueFiles(dir, "standalone")
	sa, _ := startHTTPStandalone(t, func(s *roles.Standalone) {
		s.SetClientSecurity(security.ClientSecurity{TLS: true, CertFile: cert, KeyFile: key, AuthFile: writeAuthFile(t, dir)})
	})
	api := newHTTPAPI(t, "https://"+sa.HTTPBoundAddr(), &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
	waitReady(t, api)
	checkHTTPAuth(t, api)
	if got := api.ok(http.MethodGet, "/metrics", nil, nil); !strings.Contains(string(got), "banyand_") {
		t.Fatal("/metrics over TLS: no banyand metrics")
	}

	plain := newHTTPAPI(t, "http://"+sa.HTTPBoundAddr(), nil)
	if code, _ := plain.call(http.MethodGet, "/api/healthz", nil); code != http.StatusBadRequest {
		t.Fatalf("plaintext HTTP to the TLS port: %d, want 400 (Go's answer to HTTP on a TLS port)", code)
	}
}
