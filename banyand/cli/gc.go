package cli

import (
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/spf13/pflag"
)

// defaultGCPercent is the collector's target (GOGC) unless told otherwise:
// Go's own.
//
// A higher target trades memory for CPU, and for a liaison the trade is
// measured both ways (docs/performance.md, "Settings the numbers depend
// on"): at 400 its CPU a cluster measure write went from 7.1 to 6.4 µs
// (its live heap is about 20 MB and it collected several times a second
// at 100), but its peak RSS under a storm of the largest queries went
// from 116 MiB to 228–278 MiB, past the fault suite's 256 MiB bound. So
// the default stays, and --gc-percent is there for a liaison that only
// writes.
const defaultGCPercent = 100

// gcConfig is --gc-percent, which every server role has.
type gcConfig struct{ percent int }

func (g *gcConfig) register(fs *pflag.FlagSet) {
	fs.IntVar(&g.percent, "gc-percent", 0, fmt.Sprintf("garbage collector target (GOGC): heap growth in percent over the live heap before a collection; 0 = the GOGC environment variable if set, else %d; -1 turns collection off (then GOMEMLIMIT should bound the heap)", defaultGCPercent))
}

func (g *gcConfig) validate() error {
	if g.percent < -1 || g.percent > 100000 {
		return fmt.Errorf("--gc-percent %d: want -1 (off), 0 (default) or 1..100000", g.percent)
	}
	return nil
}

// choose returns the GOGC to run with and where it comes from, given the
// GOGC environment variable's value and whether it is set. An environment
// value the runtime cannot read (it then uses 100) counts as unset.
func (g *gcConfig) choose(env string, envSet bool) (int, string) {
	if g.percent != 0 {
		return g.percent, "--gc-percent"
	}
	if envSet {
		if env == "off" {
			return -1, "GOGC environment variable"
		}
		if n, err := strconv.Atoi(env); err == nil {
			return n, "GOGC environment variable"
		}
	}
	return defaultGCPercent, "default"
}

// apply sets the collector's target as choose says and returns it and its source.
func (g *gcConfig) apply(lookup func(string) (string, bool)) (int, string) {
	env, envSet := lookup("GOGC")
	n, source := g.choose(env, envSet)
	debug.SetGCPercent(n)
	return n, source
}
