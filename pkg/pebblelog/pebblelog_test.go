package pebblelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLevelsAndFatal(t *testing.T) {
	var buf bytes.Buffer
	l := Logger{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	l.Infof("flushed %d", 1)
	if buf.Len() != 0 {
		t.Fatalf("Infof logged above debug: %q", buf.String())
	}
	l.Errorf("disk %s", "full")
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "pebble: disk full") {
		t.Fatalf("Errorf: %q", buf.String())
	}
	defer func() {
		if r := recover(); r != "pebble: corrupt" {
			t.Fatalf("Fatalf panicked with %v, want %q", r, "pebble: corrupt")
		}
	}()
	l.Fatalf("corrupt")
}
