package roles

import (
	"strings"
	"testing"
	"time"
)

// The engine flags default to the engine's defaults, and values out of
// range are refused by both roles that store data, naming the flag.
func TestEngineFlagsValidated(t *testing.T) {
	var st Storage
	st.SetDefaults()
	var sa Standalone
	sa.SetDefaults("", t.TempDir())
	for name, role := range map[string]struct {
		engine   *engineFlags
		validate func() error
	}{"storage": {&st.engine, st.Validate}, "standalone": {&sa.engine, sa.Validate}} {
		e := role.engine
		if e.WriteBuffer != 64<<20 || e.SyncGather != 250*time.Microsecond {
			t.Errorf("%s: defaults %d bytes, %v; want 64 MiB, 250µs", name, e.WriteBuffer, e.SyncGather)
		}
		if err := role.validate(); err != nil && (strings.Contains(err.Error(), "write-buffer-size") || strings.Contains(err.Error(), "write-log-gather")) {
			t.Errorf("%s: defaults refused: %v", name, err)
		}
		for _, bad := range []struct {
			set  func()
			want string
		}{
			{func() { e.WriteBuffer = 1000 }, "--write-buffer-size 1000"},
			{func() { e.SyncGather = -time.Millisecond }, "--write-log-gather -1ms"},
			{func() { e.SyncGather = time.Second }, "--write-log-gather 1s"},
		} {
			saved := *e
			bad.set()
			if err := role.validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: %s: %v, want an error naming the flag", name, bad.want, err)
			}
			*e = saved
		}
		e.SyncGather = 0 // syncs at once: allowed
		if err := role.validate(); err != nil && strings.Contains(err.Error(), "write-log-gather") {
			t.Errorf("%s: --write-log-gather 0 refused: %v", name, err)
		}
	}
}
