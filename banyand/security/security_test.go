package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/banyand-io/banyand/pkg/auth"
	"github.com/banyand-io/banyand/pkg/tlsutil/tlstest"
)

func TestClientAPIPolicy(t *testing.T) {
	for _, tc := range []struct {
		method string
		scope  auth.Scope
		open   bool
	}{
		{"/grpc.health.v1.Health/Check", "", true},
		{"/grpc.health.v1.Health/Watch", "", true},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", auth.ScopeRead, false},
		{"/banyandb.stream.v1.StreamService/Write", auth.ScopeWrite, false},
		{"/banyandb.measure.v1.MeasureService/Write", auth.ScopeWrite, false},
		{"/banyandb.stream.v1.StreamService/Query", auth.ScopeRead, false},
		{"/banyandb.property.v1.PropertyService/Apply", auth.ScopeWrite, false},
		{"/banyandb.property.v1.PropertyService/Delete", auth.ScopeWrite, false},
		{"/banyandb.property.v1.PropertyService/Query", auth.ScopeRead, false},
		{"/banyandb.measure.v1.MeasureService/Query", auth.ScopeRead, false},
		{"/banyandb.measure.v1.MeasureService/TopN", auth.ScopeRead, false},
		{"/banyandb.database.v1.GroupRegistryService/Get", auth.ScopeRead, false},
		{"/banyandb.database.v1.StreamRegistryService/List", auth.ScopeRead, false},
		{"/banyandb.database.v1.MeasureRegistryService/Exist", auth.ScopeRead, false},
		{"/banyandb.database.v1.GroupRegistryService/Create", auth.ScopeSchema, false},
		{"/banyandb.database.v1.StreamRegistryService/Update", auth.ScopeSchema, false},
		{"/banyandb.database.v1.MeasureRegistryService/Delete", auth.ScopeSchema, false},
		{"/banyandb.unknown.v1.SomeService/Apply", auth.ScopeSchema, false}, // anything unlisted
	} {
		scope, open := clientAPIPolicy(tc.method)
		if scope != tc.scope || open != tc.open {
			t.Errorf("%s: scope %q open %v, want %q %v", tc.method, scope, open, tc.scope, tc.open)
		}
	}
}

func TestSecurityFlagValidation(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "CA")
	caFile := ca.WriteCA(dir, "ca.crt")
	cert, key := ca.IssueFiles(dir, "a")
	_, otherKey := ca.IssueFiles(dir, "b")
	badAuth := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(badAuth, []byte("tokens: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		validate func() error
		want     string // "" means valid
	}{
		{"client TLS", (&ClientSecurity{TLS: true, CertFile: cert, KeyFile: key}).Validate, ""},
		{"client TLS without key", (&ClientSecurity{TLS: true, CertFile: cert}).Validate, "--tls needs both --tls-cert-file and --tls-key-file"},
		{"client TLS mismatched", (&ClientSecurity{TLS: true, CertFile: cert, KeyFile: otherKey}).Validate, "--tls-cert-file/--tls-key-file"},
		{"client TLS missing file", (&ClientSecurity{TLS: true, CertFile: cert, KeyFile: filepath.Join(dir, "x")}).Validate, "no such file"},
		{"cert without --tls", (&ClientSecurity{CertFile: cert, KeyFile: key}).Validate, "--tls is not"},
		{"bad auth file", (&ClientSecurity{AuthFile: badAuth}).Validate, "--auth-file"},
		{"cluster server", (&ClusterServerTLS{CertFile: cert, KeyFile: key, CAFile: caFile}).Validate, ""},
		{"cluster server CA alone", (&ClusterServerTLS{CAFile: caFile}).Validate, "--cluster-tls-ca-file needs"},
		{"cluster server half pair", (&ClusterServerTLS{KeyFile: key}).Validate, "set both or neither"},
		{"cluster server bad CA", (&ClusterServerTLS{CertFile: cert, KeyFile: key, CAFile: key}).Validate, "--cluster-tls-ca-file"},
		{"cluster client", (&ClusterClientTLS{CAFile: caFile, CertFile: cert, KeyFile: key}).Validate, ""},
		{"cluster client half pair", (&ClusterClientTLS{CAFile: caFile, CertFile: cert}).Validate, "set both or neither"},
		{"cluster client mismatched", (&ClusterClientTLS{CAFile: caFile, CertFile: cert, KeyFile: otherKey}).Validate, "--cluster-tls-cert-file/--cluster-tls-key-file"},
		{"server name without TLS", (&ClusterClientTLS{ServerName: "data"}).Validate, "--cluster-tls-server-name needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
