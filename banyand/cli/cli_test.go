package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
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

// The role logger is JSON on request and rate-limits repeated warnings.
func TestLoggerFormatAndRateLimit(t *testing.T) {
	cfg := logConfig{level: "info", format: "json", rateBurst: 2, rateEvery: time.Minute}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logger := cfg.newLogger(&buf)
	for i := range 5 {
		logger.Warn("write failed", "group", "g", "message_id", i)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"time":`) || !strings.Contains(lines[1], `"message_id":1`) {
		t.Fatalf("want 2 JSON lines, got %q", lines)
	}
	bad := logConfig{level: "info", format: "xml", rateBurst: -1, rateEvery: time.Minute}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "--log-format") || !strings.Contains(err.Error(), "--log-rate-burst") {
		t.Fatalf("Validate: %v, want errors naming --log-format and --log-rate-burst", err)
	}
}
