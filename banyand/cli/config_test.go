package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "banyand.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// effective runs `<args> --print-config` and returns the printed settings,
// each rendered with fmt.Sprint (lists as [a b]).
func effective(t *testing.T, env map[string]string, args ...string) map[string]string {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	root.SetArgs(append(args, "--print-config"))
	if err := root.Execute(); err != nil {
		t.Fatalf("%v --print-config: %v", args, err)
	}
	settings, err := readConfigFile(writeConfig(t, out.String()))
	if err != nil {
		t.Fatalf("printed config does not parse: %v\n%s", err, out.String())
	}
	got := map[string]string{}
	for k, v := range settings {
		got[k] = fmt.Sprint(v)
	}
	return got
}

func defaultOf(t *testing.T, role, flag string) string {
	t.Helper()
	cmd, _, err := newRoot(io.Discard, io.Discard, noEnv).Find([]string{role})
	if err != nil {
		t.Fatal(err)
	}
	return lookupFlag(cmd, flag).DefValue
}

// Precedence: flag > env > file > default, for each kind of flag.
func TestConfigPrecedence(t *testing.T) {
	kinds := []struct {
		name, role, flag            string
		file, env, cli              string // file is a YAML value
		wantFile, wantEnv, wantFlag string
	}{
		{name: "string", role: "standalone", flag: "grpc-addr",
			file: "10.0.0.1:1", env: "10.0.0.2:2", cli: "10.0.0.3:3",
			wantFile: "10.0.0.1:1", wantEnv: "10.0.0.2:2", wantFlag: "10.0.0.3:3"},
		{name: "duration", role: "standalone", flag: "ack-timeout",
			file: "3s", env: "1m", cli: "250ms",
			wantFile: "3s", wantEnv: "1m0s", wantFlag: "250ms"},
		{name: "int", role: "liaison", flag: "max-recv-msg-size",
			file: "2048", env: "4096", cli: "8192",
			wantFile: "2048", wantEnv: "4096", wantFlag: "8192"},
		{name: "string slice as list", role: "liaison", flag: "etcd-endpoints",
			file: "[a:1, b:2]", env: "e:1,e:2", cli: "f:1,f:2",
			wantFile: "[a:1 b:2]", wantEnv: "[e:1 e:2]", wantFlag: "[f:1 f:2]"},
		{name: "string slice as string", role: "storage", flag: "etcd-endpoints",
			file: `"a:1,b:2"`, env: "e:1", cli: "f:1",
			wantFile: "[a:1 b:2]", wantEnv: "[e:1]", wantFlag: "[f:1]"},
		{name: "persistent", role: "storage", flag: "log-level",
			file: "debug", env: "warn", cli: "error",
			wantFile: "debug", wantEnv: "warn", wantFlag: "error"},
	}
	for _, k := range kinds {
		cfg := writeConfig(t, k.flag+": "+k.file+"\n")
		env := map[string]string{EnvName(k.flag): k.env}
		layers := []struct {
			name string
			env  map[string]string
			args []string
			want string
		}{
			{"default", nil, []string{k.role}, defaultOf(t, k.role, k.flag)},
			{"file", nil, []string{k.role, "--config", cfg}, k.wantFile},
			{"env over file", env, []string{k.role, "--config", cfg}, k.wantEnv},
			{"flag over env and file", env, []string{k.role, "--config", cfg, "--" + k.flag, k.cli}, k.wantFlag},
		}
		for _, l := range layers {
			t.Run(k.name+"/"+l.name, func(t *testing.T) {
				if got := effective(t, l.env, l.args...)[k.flag]; got != l.want {
					t.Fatalf("%s = %q, want %q", k.flag, got, l.want)
				}
			})
		}
	}
}

func TestConfigFileFromEnv(t *testing.T) {
	cfg := writeConfig(t, "data-path: /srv/banyand\nlog-format: json\n")
	got := effective(t, map[string]string{"BANYAND_CONFIG": cfg}, "standalone")
	if got["data-path"] != "/srv/banyand" || got["log-format"] != "json" {
		t.Fatalf("BANYAND_CONFIG not applied: %v", got)
	}
}

// Persistent flags set in the file reach the role's validation.
func TestConfigPersistentFlagValidated(t *testing.T) {
	cfg := writeConfig(t, "log-level: chatty\n")
	_, err := execute(t, nil, "liaison", "--config", cfg)
	if err == nil || !strings.Contains(err.Error(), "--log-level") || !strings.Contains(err.Error(), "chatty") {
		t.Fatalf("log-level from the file should be validated: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		args    []string
		want    []string
		missing bool // the file does not exist
	}{
		{name: "unknown key", file: "grpc-adr: 127.0.0.1:1\n", args: []string{"standalone"},
			want: []string{`unknown key "grpc-adr"`, "banyand standalone"}},
		{name: "key of another role", file: "etcd-endpoints: [a]\n", args: []string{"standalone"},
			want: []string{`unknown key "etcd-endpoints"`}},
		{name: "config is not a key", file: "config: other.yaml\n", args: []string{"storage"},
			want: []string{`unknown key "config"`}},
		{name: "bad duration", file: "ack-timeout: soon\n", args: []string{"standalone"},
			want: []string{`key "ack-timeout"`, `"soon"`, "invalid duration"}},
		{name: "bad int", file: "max-recv-msg-size: 1.5\n", args: []string{"liaison"},
			want: []string{`key "max-recv-msg-size"`, "1.5"}},
		{name: "bad value overridden by flag", file: "ack-timeout: soon\n",
			args: []string{"standalone", "--ack-timeout", "1s"},
			want: []string{`key "ack-timeout"`, `"soon"`}},
		{name: "list for a scalar", file: "grpc-addr: [a, b]\n", args: []string{"standalone"},
			want: []string{`key "grpc-addr"`, "a list"}},
		{name: "mapping value", file: "log-level:\n  x: 1\n", args: []string{"storage"},
			want: []string{`key "log-level"`, "mapping"}},
		{name: "not a mapping", file: "- grpc-addr\n", args: []string{"standalone"},
			want: []string{"want a mapping"}},
		{name: "duplicate key", file: "grpc-addr: a:1\ngrpc-addr: b:2\n", args: []string{"standalone"},
			want: []string{"grpc-addr", "already set"}},
		{name: "missing file", missing: true, args: []string{"standalone"},
			want: []string{"no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "absent.yaml")
			if !tt.missing {
				path = writeConfig(t, tt.file)
			}
			_, err := execute(t, nil, append(tt.args, "--config", path, "--print-config")...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestConfigErrorExitCode(t *testing.T) {
	path := writeConfig(t, "nope: 1\n")
	var out, errOut bytes.Buffer
	if code := Main([]string{"standalone", "--config", path}, &out, &errOut); code == 0 {
		t.Fatal("unknown key should exit non-zero")
	}
	if !strings.Contains(errOut.String(), `unknown key "nope"`) {
		t.Fatalf("stderr: %q", errOut.String())
	}
	out.Reset()
	if code := Main([]string{"storage", "--print-config"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "etcd-endpoints:") {
		t.Fatalf("--print-config: exit %d, %q", code, out.String())
	}
}

// --print-config output fed back with --config prints the same again, with
// and without changes from flags, env and file.
func TestPrintConfigRoundTrip(t *testing.T) {
	cfg := writeConfig(t, "etcd-endpoints: [x:1, y:2]\nnode-name: \"123\"\n")
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"standalone defaults", nil, []string{"standalone"}},
		{"liaison defaults", nil, []string{"liaison"}},
		{"storage defaults", nil, []string{"storage"}},
		{"bench defaults", nil, []string{"bench"}},
		{"storage changed", map[string]string{"BANYAND_LOG_FORMAT": "json"},
			[]string{"storage", "--config", cfg, "--capacity", "3", "--node-lease-ttl", "7s", "--advertise-addr", "true"}},
		{"bench changed", nil, []string{"bench", "--verify=false", "--rate", "1500.5", "--target", "on"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, err := execute(t, tt.env, append(tt.args, "--print-config")...)
			if err != nil {
				t.Fatal(err)
			}
			path := writeConfig(t, first)
			second, err := execute(t, nil, tt.args[0], "--config", path, "--print-config")
			if err != nil {
				t.Fatalf("printed config does not load: %v\n%s", err, first)
			}
			if first != second {
				t.Fatalf("round trip differs:\n%s\n---\n%s", first, second)
			}
			for _, absent := range []string{"config:", "print-config:", "help:"} {
				if strings.Contains(first, "\n"+absent) {
					t.Errorf("printed config has %q", absent)
				}
			}
		})
	}
}
