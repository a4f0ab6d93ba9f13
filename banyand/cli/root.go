// Package cli is banyand's command line: a cobra root with one subcommand
// per role. Each role is a list of run.Components built from a config that
// registers its own flags; every flag can also be set from a BANYAND_*
// environment variable and from a YAML --config file keyed by flag name.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/banyand-io/banyand/pkg/logging"
	"github.com/banyand-io/banyand/pkg/run"
)

// Version is set at build time with -ldflags "-X .../banyand/cli.Version=v1.2.3".
var Version = "dev"

// Role is what a subcommand runs.
type Role interface {
	// RegisterFlags binds the role's settings to flags.
	RegisterFlags(fs *pflag.FlagSet)
	// Validate checks the settings after flags and environment are applied.
	Validate() error
	// Components builds the role's components in start order. It allocates
	// only; the group starts them.
	Components(logger *slog.Logger) ([]run.Component, error)
}

// roleCommand describes one role subcommand.
type roleCommand struct {
	use, short, long string
	role             Role
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr, osLookup)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "banyand:", err)
		return 1
	}
	return 0
}

func newRoot(stdout, stderr io.Writer, lookup func(string) (string, bool)) *cobra.Command {
	var logCfg logConfig
	root := &cobra.Command{
		Use:           "banyand",
		Short:         "banyand: the write data plane of an observability database",
		Long:          "banyand accepts BanyanDB-compatible stream and measure writes on a liaison,\nroutes them by shard to data nodes and acknowledges them once durable.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	logCfg.RegisterFlags(root.PersistentFlags())
	registerConfigFlag(root.PersistentFlags())
	annotateEnv(root.PersistentFlags())

	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "banyand", versionString())
		},
	})
	for _, rc := range roleCommands() {
		root.AddCommand(newRoleCommand(rc, &logCfg, stderr, lookup))
	}
	root.AddCommand(newBenchCommand(stdout, stderr, lookup))
	return root
}

func newRoleCommand(rc roleCommand, logCfg *logConfig, stderr io.Writer, lookup func(string) (string, bool)) *cobra.Command {
	var groupCfg run.Config
	var procs procsConfig
	var gc gcConfig
	cmd := &cobra.Command{
		Use:   rc.use,
		Short: rc.short,
		Long:  rc.long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := configure(cmd, lookup); err != nil {
				return err
			}
			if printOnly, _ := cmd.Flags().GetBool(printConfigFlag); printOnly {
				return printConfig(cmd, cmd.OutOrStdout())
			}
			if err := errors.Join(logCfg.Validate(), rc.role.Validate(), procs.validate(), gc.validate()); err != nil {
				return fmt.Errorf("invalid configuration: %w", err)
			}
			n, source := procs.apply(lookup)
			gcPercent, gcSource := gc.apply(lookup)
			logger := logCfg.newLogger(stderr).With("role", rc.use)
			comps, err := rc.role.Components(logger)
			if err != nil {
				return err
			}
			groupCfg.Name = rc.use
			g := run.NewGroup(groupCfg, logger, comps...)
			if err := g.Validate(); err != nil {
				return fmt.Errorf("invalid configuration: %w", err)
			}
			ctx, stop := run.SignalContext(context.Background())
			defer stop()
			logger.Info("banyand starting", "version", versionString(), "gomaxprocs", n, "gomaxprocs_from", source,
				"gc_percent", gcPercent, "gc_percent_from", gcSource)
			return g.Run(ctx)
		},
	}
	rc.role.RegisterFlags(cmd.Flags())
	groupCfg.RegisterFlags(cmd.Flags())
	procs.register(cmd.Flags())
	gc.register(cmd.Flags())
	registerPrintConfigFlag(cmd.Flags())
	annotateEnv(cmd.Flags())
	return cmd
}

func versionString() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " (" + s.Value[:min(12, len(s.Value))] + ")"
			}
		}
		v += " " + bi.GoVersion
	}
	return v
}

// logConfig is the logging flags every role shares.
type logConfig struct {
	level     string
	format    string
	rateBurst int
	rateEvery time.Duration
}

// Defaults of the log rate limit: a flood of one warning or error (say, a
// client sending bad writes in a loop) costs ten lines a minute and one
// summary, not a full disk.
const (
	defaultLogRateBurst    = 10
	defaultLogRateInterval = time.Minute
)

func (c *logConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.format, "log-format", "text", "log format: text or json")
	fs.IntVar(&c.rateBurst, "log-rate-burst", defaultLogRateBurst, "warnings and errors with the same message written per --log-rate-interval; the rest are counted in one summary line (0 = no limit)")
	fs.DurationVar(&c.rateEvery, "log-rate-interval", defaultLogRateInterval, "window of --log-rate-burst")
}

func (c *logConfig) Validate() error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.level)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.level)
	}
	var errs []error
	if c.format != "text" && c.format != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.format))
	}
	if c.rateBurst < 0 {
		errs = append(errs, fmt.Errorf("--log-rate-burst %d: must not be negative", c.rateBurst))
	}
	if c.rateBurst > 0 && c.rateEvery <= 0 {
		errs = append(errs, fmt.Errorf("--log-rate-interval %s: must be positive", c.rateEvery))
	}
	return errors.Join(errs...)
}

func (c *logConfig) newLogger(w io.Writer) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(strings.ToLower(c.level)))
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(logging.NewRateLimited(h, logging.RateLimitConfig{
		Burst: c.rateBurst, Interval: c.rateEvery, MinLevel: slog.LevelWarn,
	}))
}
