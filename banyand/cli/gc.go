package cli

import (
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/spf13/pflag"
)

// Each role's garbage collector target (GOGC) unless told otherwise.
//
// A liaison's live heap is small (about 20 MB under load: schema, streams'
// state, pooled buffers) and everything it allocates per write (gRPC's
// frames of small messages, answers) dies at once, so at Go's default of
// 100 it collects several times a second, and while a cycle marks, every
// pointer write pays a barrier. At 400 it collects a quarter as often and
// its heap stays around 100 MB: measured on 2 CPUs with cluster measure
// writes (docs/performance.md, "Settings the numbers depend on"), its CPU
// a write went from 7.1 to 6.4 µs, medians of four runs each. A data
// node's heap is mostly its write buffers, which the default already
// collects rarely, and a multiple of them would be memory a user sizing
// --write-buffer-size does not expect; standalone holds those too.
const (
	liaisonGCPercent = 400
	storeGCPercent   = 100
)

// gcConfig is --gc-percent, which every server role has.
type gcConfig struct {
	percent int
	role    int // the role's default
}

func (g *gcConfig) register(fs *pflag.FlagSet) {
	fs.IntVar(&g.percent, "gc-percent", 0, fmt.Sprintf("garbage collector target (GOGC): heap growth in percent over the live heap before a collection; 0 = the GOGC environment variable if set, else %d for this role; -1 turns collection off (then GOMEMLIMIT should bound the heap)", g.role))
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
	return g.role, "the role's default"
}

// apply sets the collector's target as choose says and returns it and its source.
func (g *gcConfig) apply(lookup func(string) (string, bool)) (int, string) {
	env, envSet := lookup("GOGC")
	n, source := g.choose(env, envSet)
	debug.SetGCPercent(n)
	return n, source
}
