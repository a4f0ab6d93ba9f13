package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Flags that a config file and the environment cannot set.
const (
	configFlag      = "config"
	printConfigFlag = "print-config"
	helpFlag        = "help"
)

// fileSettable reports whether a config file may set the flag.
func fileSettable(name string) bool {
	return name != configFlag && name != printConfigFlag && name != helpFlag
}

// registerConfigFlag adds the persistent --config flag.
func registerConfigFlag(fs *pflag.FlagSet) {
	fs.String(configFlag, "", "YAML file of settings keyed by flag name (e.g. grpc-addr: 127.0.0.1:17912); flags and environment override it")
}

// registerPrintConfigFlag adds a command's --print-config flag.
func registerPrintConfigFlag(fs *pflag.FlagSet) {
	fs.Bool(printConfigFlag, false, "print the effective configuration as YAML (usable with --config) and exit without starting")
}

// configure applies the environment and then the --config file to the
// flags of cmd not set on the command line, so the precedence is
// flag > env > file > default.
func configure(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	if err := applyEnv(cmd.Flags(), lookup); err != nil {
		return err
	}
	if err := applyEnv(cmd.InheritedFlags(), lookup); err != nil {
		return err
	}
	f := lookupFlag(cmd, configFlag)
	if f == nil || f.Value.String() == "" {
		return nil
	}
	path := f.Value.String()
	settings, err := readConfigFile(path)
	if err != nil {
		return err
	}
	// Check every key and value on a fresh command first, so a bad value is
	// reported even when a flag or the environment overrides it.
	fresh, _, err := newRoot(io.Discard, io.Discard, noEnv).Find(strings.Fields(cmd.CommandPath())[1:])
	if err != nil {
		return err
	}
	if err := applySettings(fresh, path, settings, true); err != nil {
		return err
	}
	return applySettings(cmd, path, settings, false)
}

func noEnv(string) (string, bool) { return "", false }

// readConfigFile parses a YAML mapping of flag name to value.
func readConfigFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	switch m := doc.(type) {
	case nil: // empty file
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	default:
		return nil, fmt.Errorf("config file %s: want a mapping of flag names to values, got %s", path, kindOf(doc))
	}
}

// applySettings sets cmd's flags from settings. Unless all is set, flags
// already set (on the command line or from the environment) are kept.
func applySettings(cmd *cobra.Command, path string, settings map[string]any, all bool) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, key := range keys {
		f := lookupFlag(cmd, key)
		if f == nil || !fileSettable(key) {
			errs = append(errs, fmt.Errorf("config file %s: unknown key %q: not a flag of %q (see %s --help)",
				path, key, cmd.CommandPath(), cmd.CommandPath()))
			continue
		}
		if (f.Changed && !all) || settings[key] == nil {
			continue
		}
		if err := setFromFile(f, settings[key]); err != nil {
			errs = append(errs, fmt.Errorf("config file %s: key %q value %s: %w", path, key, describe(settings[key]), err))
		}
	}
	return errors.Join(errs...)
}

// setFromFile sets f from a decoded YAML value: a scalar, or a list for a
// list flag. It marks f as changed.
func setFromFile(f *pflag.Flag, v any) error {
	if list, ok := v.([]any); ok {
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return fmt.Errorf("a list, but --%s takes a single %s", f.Name, f.Value.Type())
		}
		items := make([]string, len(list))
		for i, item := range list {
			s, err := scalarString(item)
			if err != nil {
				return fmt.Errorf("list item %d: %w", i, err)
			}
			items[i] = s
		}
		if err := sv.Replace(items); err != nil {
			return err
		}
		f.Changed = true
		return nil
	}
	s, err := scalarString(v)
	if err != nil {
		return err
	}
	if err := f.Value.Set(s); err != nil {
		return err
	}
	f.Changed = true
	return nil
}

func scalarString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	default:
		return "", fmt.Errorf("want a scalar, got %s", kindOf(v))
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case nil:
		return "null"
	default:
		return "a scalar"
	}
}

// describe renders a decoded value for an error message.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// lookupFlag finds a flag of cmd, its own or inherited.
func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

// printConfig writes every file-settable flag of cmd, own and inherited,
// as YAML that --config reads back.
func printConfig(cmd *cobra.Command, w io.Writer) error {
	settings := map[string]any{}
	add := func(f *pflag.Flag) {
		if !fileSettable(f.Name) {
			return
		}
		switch {
		case isSlice(f):
			settings[f.Name] = f.Value.(pflag.SliceValue).GetSlice()
		case f.Value.Type() == "bool":
			// A tri-state "bool" (bench's --verify auto) stays a string.
			if b, err := strconv.ParseBool(f.Value.String()); err == nil {
				settings[f.Name] = b
			} else {
				settings[f.Name] = f.Value.String()
			}
		case isNumber(f.Value.Type()):
			settings[f.Name] = json.Number(f.Value.String())
		default:
			settings[f.Name] = f.Value.String()
		}
	}
	cmd.InheritedFlags().VisitAll(add)
	cmd.Flags().VisitAll(add)
	out, err := yaml.Marshal(settings)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "# effective configuration of %s; use with --config FILE\n%s", cmd.CommandPath(), out); err != nil {
		return err
	}
	return nil
}

func isSlice(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

func isNumber(typ string) bool {
	switch typ {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return true
	}
	return false
}
