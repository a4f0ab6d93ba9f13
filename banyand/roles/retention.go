package roles

import (
	"context"
	"log/slog"
	"time"

	"github.com/banyand-io/banyand/banyand/storage"
)

// retentionInterval is how often expired segments are looked for. Segments
// are at least an hour long, so a minute is prompt enough.
const retentionInterval = time.Minute

// retention drops a store's expired time segments on a timer, with the TTLs
// the schema gives each group.
type retention struct {
	store  *storage.Store
	ttls   func() map[string]time.Duration
	logger *slog.Logger
}

func (r *retention) Name() string { return "retention" }

func (r *retention) Serve(ctx context.Context) error {
	t := time.NewTicker(retentionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			n, err := r.store.DropExpired(now, r.ttls())
			if err != nil {
				r.logger.Warn("retention run failed", "error", err)
			} else if n > 0 {
				r.logger.Info("dropped expired segments", "segments", n)
			}
		}
	}
}
