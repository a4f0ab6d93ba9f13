package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// Every requested profile and the trace are written, non-empty; an
// unwritable path is an error before anything starts.
func TestProfilesWritten(t *testing.T) {
	dir := t.TempDir()
	p := Profiles{
		CPU: filepath.Join(dir, "cpu"), Mem: filepath.Join(dir, "mem"), Block: filepath.Join(dir, "block"),
		Mutex: filepath.Join(dir, "mutex"), Trace: filepath.Join(dir, "trace"),
	}
	stop, err := p.start()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i := range 100_000 {
		sum += i
	}
	_ = sum
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.CPU, p.Mem, p.Block, p.Mutex, p.Trace} {
		st, err := os.Stat(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
		} else if st.Size() == 0 {
			t.Errorf("%s is empty", f)
		}
	}
	bad := Profiles{Trace: filepath.Join(dir, "no", "such", "dir", "trace")}
	if _, err := bad.start(); err == nil {
		t.Error("an unwritable trace path started")
	}
}
