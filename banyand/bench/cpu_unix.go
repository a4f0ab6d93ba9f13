//go:build unix

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is this process's user and system CPU so far.
func processCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
