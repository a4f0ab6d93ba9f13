package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// EnvPrefix prefixes the environment variable of every flag:
// --grpc-addr is BANYAND_GRPC_ADDR.
const EnvPrefix = "BANYAND_"

// EnvName is the environment variable that sets flag name.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, so the precedence is flag > env > default (the
// config file, applied after, only fills flags still unset).
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || firstErr != nil || f.Name == helpFlag || f.Name == printConfigFlag {
			return
		}
		v, ok := lookup(EnvName(f.Name))
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			firstErr = fmt.Errorf("environment variable %s=%q: %w", EnvName(f.Name), v, err)
		}
	})
	return firstErr
}

// annotateEnv appends each flag's environment variable to its usage so
// --help documents both.
func annotateEnv(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == helpFlag || f.Name == printConfigFlag || strings.Contains(f.Usage, EnvPrefix) {
			return
		}
		f.Usage += " [env " + EnvName(f.Name) + "]"
	})
}

func osLookup(k string) (string, bool) { return os.LookupEnv(k) }
