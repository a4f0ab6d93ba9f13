package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/banyand-io/banyand/internal/cputime"
)

// CPU a write is steadier than writes a second on a shared machine: a
// run that loses a core to a neighbour is slower, not costlier. So the
// tool reports each process's CPU over the write phase: its own, from
// getrusage, and each server's, from the process_cpu_seconds_total its
// /metrics serves (banyand registers Prometheus' process collector).

// CPUUse is one process's CPU over the write phase.
type CPUUse struct {
	// Process is "load tool" (with --standalone or --cluster, the
	// servers run in the same process and are included) or a server's
	// metrics URL.
	Process        string  `json:"process"`
	Seconds        float64 `json:"seconds"`
	MicrosPerWrite float64 `json:"us_per_write"`
}

// cpuSampler reads the CPU counters at the start and the end of the
// write phase.
type cpuSampler struct {
	urls   []string
	client *http.Client
	self   string
	start  []float64 // self first, then one per URL
}

func newCPUSampler(cfg Config) *cpuSampler {
	self := "load tool"
	if cfg.Standalone || cfg.Cluster {
		self = "load tool and in-process servers"
	}
	// Two scrapes a server: no connection is worth keeping between them.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	return &cpuSampler{urls: cfg.ServerMetrics, client: client, self: self}
}

// sample reads every counter now. A server whose metrics cannot be read
// fails it: the user asked for its CPU.
func (s *cpuSampler) sample(ctx context.Context) ([]float64, error) {
	self, err := cputime.Process()
	if err != nil {
		return nil, err
	}
	out := []float64{self.Seconds()}
	for _, u := range s.urls {
		v, err := s.scrape(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("--server-metrics %s: %w", u, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// begin takes the starting values.
func (s *cpuSampler) begin(ctx context.Context) error {
	var err error
	s.start, err = s.sample(ctx)
	return err
}

// end takes the final values and returns each process's use over acked
// writes.
func (s *cpuSampler) end(ctx context.Context, acked uint64) ([]CPUUse, error) {
	now, err := s.sample(ctx)
	if err != nil {
		return nil, err
	}
	names := append([]string{s.self}, s.urls...)
	uses := make([]CPUUse, len(names))
	for i, name := range names {
		uses[i] = CPUUse{Process: name, Seconds: now[i] - s.start[i]}
		if acked > 0 {
			uses[i].MicrosPerWrite = uses[i].Seconds * 1e6 / float64(acked)
		}
	}
	return uses, nil
}

const cpuMetric = "process_cpu_seconds_total"

func (s *cpuSampler) scrape(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("not Prometheus text: %w", err)
	}
	f := families[cpuMetric]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter() == nil {
		return 0, errors.New("no " + cpuMetric + " counter (is it a Prometheus process collector's /metrics?)")
	}
	return f.GetMetric()[0].GetCounter().GetValue(), nil
}
