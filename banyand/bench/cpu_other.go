//go:build !unix

package bench

import (
	"errors"
	"time"
)

// processCPU is not available here; the report then has no CPU section.
func processCPU() (time.Duration, error) {
	return 0, errors.New("process CPU time is not available on this platform")
}
