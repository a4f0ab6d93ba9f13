// Package poll is the tests' way to wait for something to happen: check a
// condition every few milliseconds until it holds, and fail the test if it
// does not within a deadline. Tests poll instead of sleeping a fixed time,
// so they are as fast as the machine allows and never flaky on a slow one;
// the deadlines are generous because they only fire on a real failure.
package poll

import (
	"testing"
	"time"
)

// Deadline is how long Until waits.
const Deadline = 20 * time.Second

// interval is how often a condition is checked: short against any wait
// worth polling for, long enough not to compete with what it waits for.
const interval = 2 * time.Millisecond

// Until checks cond until it holds, failing t with what it was waiting
// for if it does not within Deadline.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Deadline, what, cond)
}

// Within is Until with its own deadline.
func Within(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(interval)
	}
}
