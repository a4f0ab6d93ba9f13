package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/banyand-io/banyand/banyand/bench"
	"github.com/banyand-io/banyand/pkg/run"
)

// newBenchCommand builds `banyand bench`, the load tool: the final report
// goes to stdout, progress lines and logs to stderr.
func newBenchCommand(stdout, stderr io.Writer, lookup func(string) (string, bool)) *cobra.Command {
	var cfg bench.Config
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load a liaison or standalone with stream or measure writes and report throughput and latency",
		Long: `bench writes streams or measures through the public BanyanDB-compatible gRPC API
over several concurrent bidi Write streams, reports acknowledged writes/s and
per-message ack latency, and (by default for --count runs) reads every
acknowledged write back to check it is readable.

It exits non-zero if any write got a non-success status or no answer, if
verification found acknowledged writes missing, or if the target is unreachable.

Examples:
  banyand bench --standalone --kind stream --count 200000
  banyand bench --target 127.0.0.1:17912 --kind measure --duration 30s --rate 20000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := configure(cmd, lookup); err != nil {
				return err
			}
			if printOnly, _ := cmd.Flags().GetBool(printConfigFlag); printOnly {
				return printConfig(cmd, stdout)
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("invalid configuration: %w", err)
			}
			ctx, stop := run.SignalContext(context.Background())
			defer stop()
			_, err := bench.Run(ctx, cfg, stdout, stderr)
			return err
		},
	}
	cfg.RegisterFlags(cmd.Flags())
	registerPrintConfigFlag(cmd.Flags())
	annotateEnv(cmd.Flags())
	return cmd
}
