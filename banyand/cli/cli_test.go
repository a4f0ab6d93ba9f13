package cli

import (
	"bytes"
	"strings"
	"testing"
)

func execute(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	root.SetArgs(args)
	err := root.Execute()
	return out.String() + errOut.String(), err
}

// Precedence: a flag beats its environment variable, which beats the default.
func TestFlagEnvPrecedence(t *testing.T) {
	_, err := execute(t, map[string]string{"BANYAND_GRPC_ADDR": "from-env"}, "standalone", "--grpc-addr", "from-flag")
	if err == nil || !strings.Contains(err.Error(), "from-flag") || strings.Contains(err.Error(), "from-env") {
		t.Fatalf("flag should win over env: %v", err)
	}
	_, err = execute(t, map[string]string{"BANYAND_GRPC_ADDR": "from-env"}, "standalone")
	if err == nil || !strings.Contains(err.Error(), "from-env") {
		t.Fatalf("env should apply when no flag is given: %v", err)
	}
	_, err = execute(t, map[string]string{"BANYAND_LOG_LEVEL": "chatty"}, "liaison")
	if err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Fatalf("inherited flags read env too: %v", err)
	}
}

func TestHelpDocumentsEnvAndRoles(t *testing.T) {
	out, err := execute(t, nil, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"standalone", "liaison", "storage", "bench", "version"} {
		if !strings.Contains(out, role) {
			t.Errorf("--help does not list %q", role)
		}
	}
	out, err = execute(t, nil, "storage", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--etcd-endpoints", "BANYAND_ETCD_ENDPOINTS", "--node-name", "--data-path", "--http-addr"} {
		if !strings.Contains(out, want) {
			t.Errorf("storage --help lacks %q", want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := execute(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "banyand ") {
		t.Fatalf("version: %q %v", out, err)
	}
}
