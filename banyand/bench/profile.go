package bench

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/pflag"
)

// Profiles names the files the write phase's profiles go to; empty skips
// one. They cover this process only: with --standalone that is client and
// server together, which is the point (the client's share shows).
type Profiles struct {
	CPU, Mem, Block, Mutex, Trace string
}

func (p *Profiles) registerFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.CPU, "cpuprofile", "", "write a CPU profile of the write phase to this file")
	fs.StringVar(&p.Mem, "memprofile", "", "write an allocation profile (allocs) of the write phase to this file")
	fs.StringVar(&p.Block, "blockprofile", "", "write a blocking profile of the write phase to this file (sampling every blocking event above 10µs)")
	fs.StringVar(&p.Mutex, "mutexprofile", "", "write a mutex contention profile of the write phase to this file")
	fs.StringVar(&p.Trace, "trace", "", "write an execution trace of the write phase to this file (go tool trace; -pprof=sched shows scheduling delays)")
}

// blockRateNanos samples blocking events of 10µs and more; finer sampling
// slows the hot path enough to change what is measured.
const blockRateNanos = 10_000

// start begins the requested profiles; the returned stop writes them.
func (p Profiles) start() (stop func() error, err error) {
	var cpu *os.File
	if p.CPU != "" {
		if cpu, err = os.Create(p.CPU); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err = pprof.StartCPUProfile(cpu); err != nil {
			_ = cpu.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	var tr *os.File
	if p.Trace != "" {
		if tr, err = os.Create(p.Trace); err != nil {
			_ = stopCPU(cpu)
			return nil, fmt.Errorf("trace: %w", err)
		}
		if err = trace.Start(tr); err != nil {
			_ = tr.Close()
			_ = stopCPU(cpu)
			return nil, fmt.Errorf("trace: %w", err)
		}
	}
	if p.Block != "" {
		runtime.SetBlockProfileRate(blockRateNanos)
	}
	if p.Mutex != "" {
		runtime.SetMutexProfileFraction(10)
	}
	if p.Mem != "" {
		runtime.GC() // so the profile's in-use numbers start from a clean heap
	}
	return func() error {
		var errs []error
		errs = append(errs, stopCPU(cpu))
		if tr != nil {
			trace.Stop()
			errs = append(errs, tr.Close())
		}
		write := func(name, file string) {
			if file == "" {
				return
			}
			f, err := os.Create(file)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s profile: %w", name, err))
				return
			}
			errs = append(errs, pprof.Lookup(name).WriteTo(f, 0), f.Close())
		}
		write("allocs", p.Mem)
		write("block", p.Block)
		write("mutex", p.Mutex)
		if p.Block != "" {
			runtime.SetBlockProfileRate(0)
		}
		if p.Mutex != "" {
			runtime.SetMutexProfileFraction(0)
		}
		return errors.Join(errs...)
	}, nil
}

// stopCPU stops the CPU profile written to f, if any.
func stopCPU(f *os.File) error {
	if f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	return f.Close()
}
