package test

import (
	"testing"
)

func TestStandaloneStreamRoundTrip(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 4)
	checkStreamRoundTrip(t, conn, 500, 50)
}
