// Package logging holds the slog handlers banyand's roles share.
package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RateLimitConfig bounds how often records with the same level and message
// are written.
type RateLimitConfig struct {
	// Burst is how many records of one level and message pass per Interval;
	// 0 turns limiting off.
	Burst int
	// Interval is the window Burst applies to.
	Interval time.Duration
	// MinLevel is the lowest level limited; records below it always pass.
	// Roles use slog.LevelWarn: debug output is asked for, floods of
	// warnings and errors are not.
	MinLevel slog.Level
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

// maxKeys bounds the keys a limiter tracks. Messages are constant strings,
// so a process has a few dozen; past the bound new keys pass unlimited
// rather than grow the map.
const maxKeys = 4096

// SuppressedMessage is the message of the summary record a limiter writes
// for a window in which it dropped records.
const SuppressedMessage = "suppressed similar log messages"

// NewRateLimited wraps next so that, per (level, message) at or above
// cfg.MinLevel, at most cfg.Burst records pass per cfg.Interval. The rest
// are counted, and once the window is over one summary record at the same
// level is written: SuppressedMessage with the attributes "message" (the
// suppressed message), "suppressed" (how many) and "interval". The summary
// goes out with the next limited-level record after the window, so a
// process that falls silent right after a flood does not write it.
//
// Handlers derived with WithAttrs and WithGroup share the budget: a message
// logged by every client session is limited once, not per session.
func NewRateLimited(next slog.Handler, cfg RateLimitConfig) slog.Handler {
	if cfg.Burst <= 0 || cfg.Interval <= 0 {
		return next
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &rateLimited{next: next, lim: &limiter{cfg: cfg, windows: map[limitKey]*window{}}}
}

type rateLimited struct {
	next slog.Handler
	lim  *limiter
}

type limitKey struct {
	level slog.Level
	msg   string
}

type window struct {
	start      time.Time
	passed     int
	suppressed int
}

// limiter is the state every handler derived from one NewRateLimited
// shares.
type limiter struct {
	cfg RateLimitConfig

	mu        sync.Mutex // guards windows and nextSweep
	windows   map[limitKey]*window
	nextSweep time.Time
}

// summary is a finished window with suppressed records.
type summary struct {
	key        limitKey
	suppressed int
}

// admit reports whether a record of k at now passes, and returns the
// summaries of the windows that ended before now.
func (l *limiter) admit(k limitKey, now time.Time) (bool, []summary) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var done []summary
	// Sweep ended windows now and then, so a key that stopped being logged
	// gets its summary and leaves the map.
	if !now.Before(l.nextSweep) {
		for key, w := range l.windows {
			if key != k && now.Sub(w.start) >= l.cfg.Interval {
				if w.suppressed > 0 {
					done = append(done, summary{key, w.suppressed})
				}
				delete(l.windows, key)
			}
		}
		l.nextSweep = now.Add(l.cfg.Interval)
	}
	w := l.windows[k]
	switch {
	case w == nil:
		if len(l.windows) >= maxKeys {
			return true, done
		}
		l.windows[k] = &window{start: now, passed: 1}
		return true, done
	case now.Sub(w.start) >= l.cfg.Interval:
		if w.suppressed > 0 {
			done = append(done, summary{k, w.suppressed})
		}
		*w = window{start: now, passed: 1}
		return true, done
	case w.passed < l.cfg.Burst:
		w.passed++
		return true, done
	default:
		w.suppressed++
		return false, done
	}
}

func (h *rateLimited) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *rateLimited) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.lim.cfg.MinLevel {
		return h.next.Handle(ctx, r)
	}
	now := h.lim.cfg.Now()
	pass, done := h.lim.admit(limitKey{r.Level, r.Message}, now)
	for _, s := range done {
		sr := slog.NewRecord(now, s.key.level, SuppressedMessage, 0)
		sr.AddAttrs(slog.String("message", s.key.msg), slog.Int("suppressed", s.suppressed),
			slog.Duration("interval", h.lim.cfg.Interval))
		if err := h.next.Handle(ctx, sr); err != nil {
			return err
		}
	}
	if !pass {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *rateLimited) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &rateLimited{next: h.next.WithAttrs(attrs), lim: h.lim}
}

func (h *rateLimited) WithGroup(name string) slog.Handler {
	return &rateLimited{next: h.next.WithGroup(name), lim: h.lim}
}
