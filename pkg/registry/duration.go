package registry

import (
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration the way BanyanDB v0.10 does wherever its
// API takes one as a string (a measure's interval, e.g. "1m", "1h", "1d"):
// Go's syntax, plus a whole number of days before a "d". As in BanyanDB,
// only the digits before the first "d" count ("1d12h" is one day).
func ParseDuration(s string) (time.Duration, error) {
	i := strings.IndexByte(s, 'd')
	if i <= 0 {
		return time.ParseDuration(s)
	}
	neg := false
	if c := s[0]; c == '-' || c == '+' {
		neg, s, i = c == '-', s[1:], i-1
	}
	days, err := strconv.Atoi(s[:i])
	if err != nil {
		return 0, err
	}
	if days > int(maxDays) {
		return 0, strconv.ErrRange
	}
	if neg {
		days = -days
	}
	return 24 * time.Hour * time.Duration(days), nil
}

// maxDays keeps a day count from overflowing time.Duration.
const maxDays = int64(1<<63-1) / int64(24*time.Hour)
