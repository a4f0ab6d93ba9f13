package gateway

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// wantError checks an answer is grpc-gateway's JSON error with the HTTP
// status and gRPC code.
func wantError(t *testing.T, what string, code int, body []byte, wantHTTP int, wantCode codes.Code) {
	t.Helper()
	if code != wantHTTP {
		t.Errorf("%s: HTTP %d %s, want %d", what, code, body, wantHTTP)
		return
	}
	v, ok := decodeJSON(t, body).(map[string]any)
	if !ok || v["code"] != float64(wantCode) || v["message"] == "" || v["details"] == nil {
		t.Errorf("%s: body %s, want {code: %d, message, details}", what, body, wantCode)
	}
}

// stillServing checks the API answers after bad input.
func stillServing(t *testing.T, e *env) {
	t.Helper()
	e.fake.answer = func(string) (proto.Message, error) {
		return &commonv1.GetAPIVersionResponse{Version: &commonv1.APIVersion{Version: "0.10"}}, nil
	}
	if code, body := e.do(t, http.MethodGet, "/api/v1/common/api/version", "", ""); code != http.StatusOK || !strings.Contains(string(body), `"0.10"`) {
		t.Fatalf("API version after bad input: %d %s", code, body)
	}
}

func TestBadInput(t *testing.T) {
	const limit = 4 << 10
	e := newEnv(t, limit)
	before := e.fake.count()
	huge := `{"group":{"metadata":{"name":"` + strings.Repeat("x", limit) + `"}}}`
	for _, c := range []struct {
		name                      string
		method, path, ctype, body string
		wantHTTP                  int
		wantCode                  codes.Code
	}{
		{"malformed JSON", http.MethodPost, "/api/v1/group/schema", "application/json", `{"group": {`, http.StatusBadRequest, codes.InvalidArgument},
		{"not JSON at all", http.MethodPost, "/api/v1/stream/data", "application/json", `groups=sw`, http.StatusBadRequest, codes.InvalidArgument},
		{"a field of the wrong type", http.MethodPost, "/api/v1/group/schema", "application/json", `{"group": "sw"}`, http.StatusBadRequest, codes.InvalidArgument},
		{"unknown route", http.MethodGet, "/api/v1/nope", "", "", http.StatusNotFound, codes.NotFound},
		{"unknown version", http.MethodGet, "/api/v2/group/schema/lists", "", "", http.StatusNotFound, codes.NotFound},
		{"wrong method", http.MethodPatch, "/api/v1/group/schema/sw", "application/json", `{}`, http.StatusMethodNotAllowed, codes.Unimplemented},
		{"huge body", http.MethodPost, "/api/v1/group/schema", "application/json", huge, http.StatusRequestEntityTooLarge, codes.ResourceExhausted},
		{"form body", http.MethodPost, "/api/v1/group/schema", "application/x-www-form-urlencoded", `group=sw`, http.StatusUnsupportedMediaType, codes.InvalidArgument},
		{"XML body", http.MethodPost, "/api/v1/stream/data", "application/xml", `<q/>`, http.StatusUnsupportedMediaType, codes.InvalidArgument},
		{"protobuf body", http.MethodPost, "/api/v1/stream/data", "application/x-protobuf", "\x0a\x02sw", http.StatusUnsupportedMediaType, codes.InvalidArgument},
		{"bad content type", http.MethodPost, "/api/v1/stream/data", "json;;", `{}`, http.StatusUnsupportedMediaType, codes.InvalidArgument},
	} {
		code, body := e.do(t, c.method, c.path, c.ctype, c.body)
		wantError(t, c.name, code, body, c.wantHTTP, c.wantCode)
		stillServing(t, e)
	}
	// None of them reached the gRPC server; only the checks in between.
	if got := e.fake.count() - before; got != 11 {
		t.Errorf("the gRPC server saw %d calls, want only the 11 API version checks", got)
	}

	t.Run("huge body without a length", func(t *testing.T) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.base+"/api/v1/group/schema", io.MultiReader(strings.NewReader(huge)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1 // chunked
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		wantError(t, "chunked huge body", resp.StatusCode, body, http.StatusRequestEntityTooLarge, codes.ResourceExhausted)
		stillServing(t, e)
	})

	t.Run("a body for another message", func(t *testing.T) {
		// As in BanyanDB, fields the message does not have are ignored:
		// the server gets an empty request and judges it (banyand's
		// registries answer INVALID_ARGUMENT, see test/httpapi_test.go).
		e.fake.answer = func(string) (proto.Message, error) {
			return nil, status.Error(codes.InvalidArgument, "group is required")
		}
		code, body := e.do(t, http.MethodPost, "/api/v1/group/schema", "application/json", `{"groups":["sw"],"name":"segment","limit":10}`)
		wantError(t, "stream query body to group create", code, body, http.StatusBadRequest, codes.InvalidArgument)
		got := new(databasev1.GroupRegistryServiceCreateRequest)
		if err := proto.Unmarshal(e.fake.last(t).req, got); err != nil || got.GetGroup() != nil {
			t.Errorf("gRPC request %v (%v), want an empty one", got, err)
		}
		stillServing(t, e)
	})
}

func TestErrorsKeepTheirCode(t *testing.T) {
	e := newEnv(t, 1<<20)
	for _, c := range []struct {
		code     codes.Code
		wantHTTP int
	}{
		{codes.NotFound, http.StatusNotFound},
		{codes.AlreadyExists, http.StatusConflict},
		{codes.InvalidArgument, http.StatusBadRequest},
		{codes.FailedPrecondition, http.StatusBadRequest},
		{codes.Unauthenticated, http.StatusUnauthorized},
		{codes.PermissionDenied, http.StatusForbidden},
		{codes.Unavailable, http.StatusServiceUnavailable},
		{codes.ResourceExhausted, http.StatusTooManyRequests},
		{codes.Unimplemented, http.StatusNotImplemented},
	} {
		e.fake.answer = func(string) (proto.Message, error) { return nil, status.Error(c.code, "because") }
		code, body := e.do(t, http.MethodGet, "/api/v1/group/schema/sw", "", "")
		wantError(t, c.code.String(), code, body, c.wantHTTP, c.code)
		if !strings.Contains(string(body), `"because"`) {
			t.Errorf("%s: body %s lost the message", c.code, body)
		}
	}
}

// The caller's credentials reach the gRPC server as its interceptors read
// them: the Authorization header, and BanyanDB's username and password.
func TestForwardsCredentials(t *testing.T) {
	e := newEnv(t, 1<<20)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:secret"))
	for _, c := range []struct {
		header []string
		key    string
		want   string
	}{
		{[]string{"Authorization", "Bearer tok"}, "authorization", "Bearer tok"},
		{[]string{"Authorization", basic}, "authorization", basic},
		{[]string{"Grpc-Metadata-Username", "ops", "Grpc-Metadata-Password", "secret"}, "username", "ops"},
		{[]string{"Grpc-Metadata-Username", "ops", "Grpc-Metadata-Password", "secret"}, "password", "secret"},
	} {
		if code, body := e.do(t, http.MethodGet, "/api/v1/group/schema/lists", "", "", c.header...); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		if got := e.fake.last(t).md.Get(c.key); len(got) != 1 || got[0] != c.want {
			t.Errorf("headers %v: metadata %s = %v, want %q", c.header, c.key, got, c.want)
		}
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, 1<<20)
	code, body := e.do(t, http.MethodGet, "/api/healthz", "", "")
	if code != http.StatusOK || string(body) != "SERVING" {
		t.Fatalf("healthz: %d %q, want 200 SERVING", code, body)
	}
	if err := e.gw.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/healthz", "/api/v1/group/schema/lists"} {
		code, body = e.do(t, http.MethodGet, p, "", "")
		wantError(t, p+" after stop", code, body, http.StatusServiceUnavailable, codes.Unavailable)
	}
}

// A gateway whose gRPC server is gone answers 503, with JSON, at once.
func TestServerGone(t *testing.T) {
	gw := New(Config{MaxBodyBytes: 1 << 20}, Deps{Logger: slog.New(slog.DiscardHandler), Target: func() string { return "127.0.0.1:1" }})
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer gw.Stop(context.Background())
	if got := loopback("0.0.0.0:17912"); got != "127.0.0.1:17912" {
		t.Errorf("loopback(0.0.0.0:17912) = %s", got)
	}
	if got := loopback("[::]:17912"); got != "[::1]:17912" {
		t.Errorf("loopback([::]:17912) = %s", got)
	}
	if got := loopback("10.1.2.3:17912"); got != "10.1.2.3:17912" {
		t.Errorf("loopback(10.1.2.3:17912) = %s", got)
	}
	for _, p := range []string{"/api/v1/group/schema/lists", "/api/healthz"} {
		rec := &recorder{header: http.Header{}}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, p, nil)
		gw.ServeHTTP(rec, req)
		if rec.code != http.StatusServiceUnavailable {
			t.Errorf("%s with the gRPC server down: %d %s", p, rec.code, rec.body.String())
		}
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(c int)   { r.code = c }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
