package registry

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1m", time.Minute, true},
		{"1h", time.Hour, true},
		{"1d", 24 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"+2d", 48 * time.Hour, true},
		{"-1d", -24 * time.Hour, true},
		{"1d12h", 24 * time.Hour, true}, // BanyanDB reads the days only
		{"90s", 90 * time.Second, true},
		{"1x", 0, false},
		{"d", 0, false},
		{"1.5d", 0, false},
		{"", 0, false},
		{"99999999999d", 0, false},
	} {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
