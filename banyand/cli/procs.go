package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/pflag"
)

// extraProcs is how many Ps a server role runs beyond the CPUs it may use.
//
// A P is held by a goroutine in a blocking syscall until the runtime's
// monitor takes it back (20 µs to 10 ms later), and by a goroutine doing a
// long stretch of work until it is preempted (10 ms). The write path has
// both: Pebble's WAL goroutine sits in fdatasync for every commit, and a
// memtable flush or compaction runs for a few hundred milliseconds. With
// GOMAXPROCS equal to 2 CPUs either one halves the Ps that serve requests,
// and writes queue behind it; two spare Ps let the kernel share the CPUs
// among all runnable threads instead. Measured on 2 CPUs (docs/performance.md):
// the p99 ack latency at 60k writes/s went from a median of 13.7 ms to
// 8.7 ms over six runs each, and its worst case from 67 ms to 22 ms.
const extraProcs = 2

// procsConfig is --procs, which every server role has.
type procsConfig struct{ n int }

func (p *procsConfig) register(fs *pflag.FlagSet) {
	fs.IntVar(&p.n, "procs", 0, fmt.Sprintf("GOMAXPROCS for this process; 0 = the GOMAXPROCS environment variable if set, else the CPUs available plus %d", extraProcs))
}

func (p *procsConfig) validate() error {
	if p.n < 0 || p.n > 4096 {
		return fmt.Errorf("--procs %d: want 0..4096", p.n)
	}
	return nil
}

// choose returns the GOMAXPROCS to run with and where it comes from, given
// the runtime's current value (the CPUs available, unless the environment
// set it) and whether the GOMAXPROCS environment variable is set.
func (p *procsConfig) choose(current int, envSet bool) (int, string) {
	switch {
	case p.n > 0:
		return p.n, "--procs"
	case envSet:
		return current, "GOMAXPROCS environment variable"
	default:
		return current + extraProcs, fmt.Sprintf("CPUs available plus %d", extraProcs)
	}
}

// apply sets GOMAXPROCS as choose says and returns the value and its source.
func (p *procsConfig) apply(lookup func(string) (string, bool)) (int, string) {
	_, envSet := lookup("GOMAXPROCS")
	n, source := p.choose(runtime.GOMAXPROCS(0), envSet)
	runtime.GOMAXPROCS(n)
	return n, source
}
