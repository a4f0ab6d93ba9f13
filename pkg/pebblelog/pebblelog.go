// Package pebblelog adapts slog to Pebble's logger, so every Pebble store in
// banyand logs the same way.
package pebblelog

import (
	"fmt"
	"log/slog"
)

// Logger sends Pebble's informational chatter to slog at debug level and
// its errors at error level. Fatalf logs, then panics as Pebble expects.
type Logger struct{ Log *slog.Logger }

// Infof implements pebble.Logger.
func (l Logger) Infof(format string, args ...any) {
	l.Log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

// Errorf implements pebble.Logger.
func (l Logger) Errorf(format string, args ...any) {
	l.Log.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf implements pebble.Logger.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Log.Error("pebble: fatal: " + msg)
	panic("pebble: " + msg)
}
