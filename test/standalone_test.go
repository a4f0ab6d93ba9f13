package test

import (
	"testing"
)

func TestStandaloneStreamRoundTrip(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 4)
	checkStreamRoundTrip(t, conn, 500, 50)
}

func TestStandaloneMeasureRoundTrip(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createMeasureSchema(t, conn, 3)
	checkMeasureRoundTrip(t, conn, 400, 40)
}

// A standalone keeps its schema and data across a restart.
func TestStandaloneRestartKeepsSchemaAndData(t *testing.T) {
	dir := t.TempDir()
	conn, r := startStandalone(t, dir)
	createStreamSchema(t, conn, 2)
	checkStreamRoundTrip(t, conn, 50, 5)
	r.stop(t)

	conn, _ = startStandalone(t, dir)
	if n := len(queryAllStream(t, conn, 100)); n != 50 {
		t.Fatalf("after restart %d elements readable, want 50", n)
	}
}
