//go:build faults

package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// registeredNodes returns the data nodes registered in etcd (banyand's
// default namespace): name -> the key's create revision, which changes
// when a node registers anew.
func registeredNodes(ctx context.Context, endpoint string) (map[string]int64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	const prefix = "banyand/nodes/"
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	nodes := map[string]int64{}
	for _, kv := range resp.Kvs {
		nodes[strings.TrimPrefix(string(kv.Key), prefix)] = kv.CreateRevision
	}
	return nodes, nil
}

// waitRegistered polls etcd until every name in want is registered and
// returns the registrations.
func waitRegistered(t *testing.T, endpoint string, limit time.Duration, want ...string) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := registeredNodes(ctx, endpoint)
		cancel()
		missing := 0
		for _, w := range want {
			if _, ok := got[w]; !ok {
				missing++
			}
		}
		if err == nil && missing == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("data nodes %v not all registered in etcd within %s: registered %v, err %v", want, limit, got, err)
		}
		time.Sleep(pollInterval)
	}
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

// scrapeMetrics returns the samples of a Prometheus text page whose name
// starts with prefix, keyed by the sample's name and labels as written.
func scrapeMetrics(ctx context.Context, addr, prefix string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, nil
}

// failedBetween counts messages answered with an error status in [from, to).
func failedBetween(outs []outcome, from, to time.Time) int {
	n := 0
	for _, o := range outs {
		if o.answered && o.status != statusOK && !o.answeredAt.Before(from) && o.answeredAt.Before(to) {
			n++
		}
	}
	return n
}

// ackLatencies returns the answer latencies of the messages sent in
// [from, to) and acknowledged, sorted.
func ackLatencies(outs []outcome, from, to time.Time) []time.Duration {
	var ds []time.Duration
	for _, o := range outs {
		if o.sent && o.answered && o.status == statusOK && !o.sentAt.Before(from) && o.sentAt.Before(to) {
			ds = append(ds, o.answeredAt.Sub(o.sentAt))
		}
	}
	slices.Sort(ds)
	return ds
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}
