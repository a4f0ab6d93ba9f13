package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// A server role runs with spare Ps unless told otherwise; the flag beats
// the environment variable, which beats the default.
func TestProcsChoice(t *testing.T) {
	for _, tc := range []struct {
		flag, current int
		envSet        bool
		want          int
		source        string
	}{
		{0, 2, false, 2 + extraProcs, "CPUs available"},
		{0, 8, false, 8 + extraProcs, "CPUs available"},
		{0, 3, true, 3, "GOMAXPROCS environment"},
		{5, 2, true, 5, "--procs"},
		{1, 2, false, 1, "--procs"},
	} {
		p := procsConfig{n: tc.flag}
		got, source := p.choose(tc.current, tc.envSet)
		if got != tc.want || !strings.Contains(source, tc.source) {
			t.Errorf("flag %d, current %d, env %v: %d (%s), want %d (%s)", tc.flag, tc.current, tc.envSet, got, source, tc.want, tc.source)
		}
	}
	if _, err := execute(t, nil, "standalone", "--procs", "-1"); err == nil || !strings.Contains(err.Error(), "--procs -1") {
		t.Errorf("--procs -1: %v, want a validation error naming the flag", err)
	}
}

// apply sets what choose picks: with no flag and no environment variable,
// the runtime's value plus extraProcs.
func TestProcsApplySetsGOMAXPROCS(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	var p procsConfig
	n, _ := p.apply(func(string) (string, bool) { return "", false })
	if n != before+extraProcs || runtime.GOMAXPROCS(0) != n {
		t.Fatalf("apply gave %d and GOMAXPROCS is %d, want %d", n, runtime.GOMAXPROCS(0), before+extraProcs)
	}
}

// The collector's target: the flag beats the environment variable, which
// beats the default; an unreadable environment value is ignored, as the
// runtime ignores it.
func TestGCPercentChoice(t *testing.T) {
	for _, tc := range []struct {
		flag   int
		env    string
		envSet bool
		want   int
		source string
	}{
		{0, "", false, defaultGCPercent, "default"},
		{0, "250", true, 250, "GOGC environment"},
		{0, "off", true, -1, "GOGC environment"},
		{0, "lots", true, defaultGCPercent, "default"},
		{150, "250", true, 150, "--gc-percent"},
		{-1, "", false, -1, "--gc-percent"},
	} {
		g := gcConfig{percent: tc.flag}
		got, source := g.choose(tc.env, tc.envSet)
		if got != tc.want || !strings.Contains(source, tc.source) {
			t.Errorf("flag %d, env %q (%v): %d (%s), want %d (%s)", tc.flag, tc.env, tc.envSet, got, source, tc.want, tc.source)
		}
	}
	if _, err := execute(t, nil, "liaison", "--gc-percent", "-2"); err == nil || !strings.Contains(err.Error(), "--gc-percent -2") {
		t.Errorf("--gc-percent -2: %v, want a validation error naming the flag", err)
	}
}

// apply sets the runtime's target to what choose picks.
func TestGCPercentApply(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	g := gcConfig{percent: 250}
	n, _ := g.apply(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); n != 250 || got != 250 {
		t.Fatalf("apply gave %d and the runtime had %d, want 250", n, got)
	}
}
