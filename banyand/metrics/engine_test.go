package metrics

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
)

// gatherEngine scrapes reg: each family's name and first value.
func gatherEngine(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		out[f.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return out
}

// The engine metrics follow the store: none before it opens or after it
// stops, every one while it is open, with the WAL counting a write and
// its sync.
func TestEngineMetricsFollowTheStore(t *testing.T) {
	store := storage.New(storage.Config{Dir: t.TempDir()}, nil, slog.New(slog.DiscardHandler))
	c := newEngineCollector(EngineStatsOf(store))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if got := gatherEngine(t, reg); len(got) != 0 {
		t.Fatalf("before Start: %v, want no metrics", got)
	}
	if err := store.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db, err := store.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(context.Background(), []tsdb.Write{{Kind: tsdb.KindStream, Group: "g", Name: "n", SeriesKey: []byte("s"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	got := gatherEngine(t, reg)
	if len(got) != 21 {
		t.Errorf("while open: %d metrics, want 21: %v", len(got), got)
	}
	if got["banyand_storage_engine_wal_syncs_total"] != 1 {
		t.Errorf("wal_syncs_total %v after one write, want 1", got["banyand_storage_engine_wal_syncs_total"])
	}
	if got["banyand_storage_engine_wal_bytes_written_total"] <= 0 {
		t.Errorf("wal_bytes_written_total %v after a write, want > 0", got["banyand_storage_engine_wal_bytes_written_total"])
	}
	if err := store.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := gatherEngine(t, reg); len(got) != 0 {
		t.Fatalf("after Stop: %v, want no metrics", got)
	}
}
