package roles

import (
	"strings"
	"testing"
)

// --write-buffer-size defaults to the engine's default, and a size below
// 1 MiB is refused by both roles that store data, naming the flag.
func TestWriteBufferSizeValidated(t *testing.T) {
	var st Storage
	st.SetDefaults()
	var sa Standalone
	sa.SetDefaults("", t.TempDir())
	for name, role := range map[string]struct {
		size     *int64
		validate func() error
	}{"storage": {&st.WriteBuffer, st.Validate}, "standalone": {&sa.WriteBuffer, sa.Validate}} {
		if *role.size != 64<<20 {
			t.Errorf("%s: default %d, want 64 MiB", name, *role.size)
		}
		if err := role.validate(); err != nil && strings.Contains(err.Error(), "write-buffer-size") {
			t.Errorf("%s: default refused: %v", name, err)
		}
		*role.size = 1000
		if err := role.validate(); err == nil || !strings.Contains(err.Error(), "--write-buffer-size 1000") {
			t.Errorf("%s: 1000 bytes: %v, want an error naming the flag", name, err)
		}
	}
}
