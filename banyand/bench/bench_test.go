package bench

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// checkClean asserts a count-bounded run wrote and read back every message.
func checkClean(t *testing.T, rep Report, err error, count uint64) {
	t.Helper()
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, rep.String())
	}
	if rep.Sent != count || rep.Acked != count || rep.ErrorCount != 0 {
		t.Fatalf("sent %d, acked %d, errors %d (%v); want %d, %d, 0", rep.Sent, rep.Acked, rep.ErrorCount, rep.Errors, count, count)
	}
	if rep.Verify == nil || rep.Verify.Checked != count || rep.Verify.Readable != count || rep.Verify.Missing != 0 || rep.Verify.Error != "" {
		t.Fatalf("verify = %+v, want %d checked and readable", rep.Verify, count)
	}
	if rep.BytesSent == 0 || rep.LatencyMillis.Max < rep.LatencyMillis.P50 {
		t.Fatalf("implausible report: %s", rep.String())
	}
}

// TestFlushesAsOAP writes as OAP's bulk flushes do: a stream every 7
// messages, the spec on its first, values only after; every write is
// acked and read back.
func TestFlushesAsOAP(t *testing.T) {
	addr, _ := startTestStandalone(t)
	for _, kind := range []string{KindStream, KindMeasure, KindTrace} {
		t.Run(kind, func(t *testing.T) {
			cfg := parseConfig(t, "--target", addr, "--kind", kind, "--count", "500", "--entities", "11",
				"--streams", "3", "--flush-size", "7")
			var out syncBuffer
			rep, err := Run(runCtx(t), cfg, &out, testWriter{t})
			checkClean(t, rep, err, 500)
			// 500 messages in flushes of 7 over 3 writers: at least 72 streams,
			// and each writer may open one more that finds the count reached.
			if rep.StreamsOpened < 72 || rep.StreamsOpened > 75 {
				t.Fatalf("%d streams opened, want 72..75", rep.StreamsOpened)
			}
		})
	}
}

func TestRunAgainstStandalone(t *testing.T) {
	addr, httpAddr := startTestStandalone(t)
	for _, kind := range []string{KindStream, KindMeasure, KindTrace} {
		t.Run(kind, func(t *testing.T) {
			// Few entities and a small in-flight window exercise paging
			// in verification and backpressure in the writers.
			cfg := parseConfig(t, "--target", addr, "--kind", kind, "--count", "3000",
				"--entities", "7", "--streams", "3", "--max-in-flight", "50", "--payload-bytes", "64")
			var out syncBuffer
			rep, err := Run(runCtx(t), cfg, &out, testWriter{t})
			checkClean(t, rep, err, 3000)
			if !strings.Contains(out.String(), "result          OK") {
				t.Fatalf("report does not say OK:\n%s", out.String())
			}
			if len(rep.CPU) != 1 || rep.CPU[0].Process != "load tool" || rep.CPU[0].Seconds <= 0 || rep.CPU[0].MicrosPerWrite <= 0 {
				t.Fatalf("CPU without --server-metrics = %+v, want the load tool's, above 0", rep.CPU)
			}
			// A second run into the same, now existing, schema stays exact:
			// the earlier run's data is not mistaken for this one's.
			// With the server's /metrics (here the same process: the
			// server's count includes the tool's, so it is at least as big).
			metrics := "http://" + httpAddr + "/metrics"
			cfg = parseConfig(t, "--target", addr, "--kind", kind, "--count", "4000", "--entities", "7", "--json",
				"--server-metrics", metrics)
			out = syncBuffer{}
			rep, err = Run(runCtx(t), cfg, &out, testWriter{t})
			checkClean(t, rep, err, 4000)
			var decoded Report
			if err := json.Unmarshal([]byte(out.String()), &decoded); err != nil {
				t.Fatalf("--json output is not one JSON object: %v\n%s", err, out.String())
			}
			if decoded.Acked != 4000 || decoded.Verify.Readable != 4000 {
				t.Fatalf("JSON report = %+v", decoded)
			}
			if c := decoded.CPU; len(c) != 2 || c[1].Process != metrics || c[1].Seconds <= 0 ||
				c[1].Seconds < c[0].Seconds-0.05 || c[1].MicrosPerWrite != c[1].Seconds*1e6/4000 {
				t.Fatalf("JSON report's CPU = %+v, want the tool's and the server's", c)
			}
		})
	}
}

func TestRunStandaloneFlag(t *testing.T) {
	cfg := parseConfig(t, "--standalone", "--kind", "measure", "--count", "1000", "--entities", "50", "--rate", "20000")
	rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
	checkClean(t, rep, err, 1000)
}

// --cluster brings up etcd, two data nodes and a liaison in process; the
// run is verified by querying, so the writes went through the publisher
// to the data nodes and back.
func TestRunClusterFlag(t *testing.T) {
	cfg := parseConfig(t, "--cluster", "--count", "2000", "--entities", "50", "--shards", "4")
	rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
	checkClean(t, rep, err, 2000)
}

func TestRunDurationBounded(t *testing.T) {
	addr, _ := startTestStandalone(t)
	cfg := parseConfig(t, "--target", addr, "--duration", "300ms", "--rate", "2000", "--verify")
	rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, rep.String())
	}
	if rep.Sent == 0 || rep.Acked != rep.Sent || rep.Verify == nil || rep.Verify.Readable != rep.Acked {
		t.Fatalf("report:\n%s", rep.String())
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{[]string{"--standalone"}, ""},
		{[]string{"--target", "db:17912", "--kind", "measure", "--duration", "10s", "--rate", "500"}, ""},
		{nil, "give --target host:port, --standalone or --cluster"},
		{[]string{"--standalone", "--target", "a:1"}, "exclusive"},
		{[]string{"--cluster", "--target", "a:1"}, "exclusive"},
		{[]string{"--cluster", "--standalone"}, "exclusive"},
		{[]string{"--cluster", "--keep-data"}, ""},
		{[]string{"--target", "nohost"}, "want host:port"},
		{[]string{"--target", "h:0"}, "port must be"},
		{[]string{"--target", "h:1", "--keep-data"}, "--keep-data needs --standalone or --cluster"},
		{[]string{"--standalone", "--kind", "trace"}, ""},
		{[]string{"--standalone", "--kind", "log"}, `--kind "log"`},
		{[]string{"--standalone", "--kind", "measure", "--shape", "oap"}, ""},
		{[]string{"--standalone", "--shape", "segment"}, `--shape "segment": want realistic, light or oap`},
		{[]string{"--standalone", "--kind", "trace", "--spans-per-trace", "0"}, "--spans-per-trace 0"},
		{[]string{"--standalone", "--shards", "0"}, "--shards 0"},
		{[]string{"--standalone", "--entities", "0"}, "--entities 0"},
		{[]string{"--standalone", "--payload-bytes", "-1"}, "--payload-bytes -1"},
		{[]string{"--standalone", "--streams", "0"}, "--streams 0"},
		{[]string{"--standalone", "--count", "-5"}, "--count -5"},
		{[]string{"--standalone", "--duration", "-1s"}, "--duration -1s"},
		{[]string{"--standalone", "--count", "5", "--duration", "1s"}, "--count and --duration are exclusive"},
		{[]string{"--standalone", "--rate", "-1"}, "--rate -1"},
		{[]string{"--standalone", "--rate", "10", "--rate-burst", "-1ms"}, "--rate-burst -1ms"},
		{[]string{"--standalone", "--rate", "10", "--rate-burst", "2s"}, "--rate-burst 2s"},
		{[]string{"--standalone", "--max-in-flight", "0"}, "--max-in-flight 0"},
		{[]string{"--standalone", "--connect-timeout", "0s"}, "--connect-timeout"},
		{[]string{"--standalone", "--timeout", "-1s"}, "--timeout"},
		{[]string{"--standalone", "--stall-timeout", "0s"}, "--stall-timeout"},
		{[]string{"--standalone", "--server-metrics", "http://127.0.0.1:9/metrics,https://h/metrics"}, ""},
		{[]string{"--standalone", "--server-metrics", "127.0.0.1:9/metrics"}, `--server-metrics "127.0.0.1:9/metrics"`},
		{[]string{"--standalone", "--server-metrics", "ftp://h/metrics"}, `--server-metrics "ftp://h/metrics"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg := parseConfig(t, tc.args...)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Run refuses a bad config before touching the network.
	if _, err := Run(context.Background(), parseConfig(t, "--standalone", "--streams", "0"), nil, nil); err == nil {
		t.Fatal("Run accepted --streams 0")
	}
}

// A --server-metrics URL that does not serve a process CPU counter fails
// the run before it writes, saying which URL and why.
func TestServerMetricsUnreadable(t *testing.T) {
	addr, httpAddr := startTestStandalone(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/metrics"
	_ = dead.Close()
	for _, tc := range []struct{ url, want string }{
		{deadURL, "connect"},
		{"http://" + httpAddr + "/healthz", "not Prometheus text"},
		{"http://" + httpAddr + "/nothing-here", "HTTP 404"},
	} {
		cfg := parseConfig(t, "--target", addr, "--count", "100", "--server-metrics", tc.url)
		rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
		if err == nil || !strings.Contains(err.Error(), tc.url) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--server-metrics %s: error %v, want one naming the URL and %q", tc.url, err, tc.want)
		}
		if rep.Sent != 0 {
			t.Errorf("--server-metrics %s: %d writes sent before the check", tc.url, rep.Sent)
		}
	}
}

func TestVerifyFlagDefaults(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want optBool
	}{
		{[]string{"--standalone"}, optTrue},
		{[]string{"--standalone", "--duration", "1s"}, optFalse},
		{[]string{"--standalone", "--duration", "1s", "--verify"}, optTrue},
		{[]string{"--standalone", "--verify=false"}, optFalse},
	} {
		if got := parseConfig(t, tc.args...).resolved().Verify; got != tc.want {
			t.Errorf("%v: verify %s, want %s", tc.args, &got, &tc.want)
		}
	}
}

func TestRunUnreachable(t *testing.T) {
	// A port that was just free: nothing listens there.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	_, err = Run(runCtx(t), parseConfig(t, "--target", addr), nil, testWriter{t})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %v, want ErrUnreachable naming %s", err, addr)
	}
}

func TestRunErrorStatuses(t *testing.T) {
	internal := modelv1.Status_STATUS_INTERNAL_ERROR.String()
	addr := startFake(t, &fakeStreams{
		answer: func(*streamv1.WriteRequest) (string, bool) { return internal, true },
	})
	cfg := parseConfig(t, "--target", addr, "--count", "500", "--create-schema=false", "--verify=false")
	var out syncBuffer
	rep, err := Run(runCtx(t), cfg, &out, testWriter{t})
	if !errors.Is(err, ErrWritesFailed) {
		t.Fatalf("error %v, want ErrWritesFailed", err)
	}
	if rep.Sent != 500 || rep.Acked != 0 || rep.Errors[internal] != 500 || rep.ErrorCount != 500 {
		t.Fatalf("report:\n%s", rep.String())
	}
	if !strings.Contains(out.String(), internal+"=500") || !strings.Contains(out.String(), "FAIL") {
		t.Fatalf("printed report does not list the status:\n%s", out.String())
	}
}

func TestRunNoAnswer(t *testing.T) {
	addr := startFake(t, &fakeStreams{
		answer: func(*streamv1.WriteRequest) (string, bool) { return "", false },
		hold:   true,
	})
	cfg := parseConfig(t, "--target", addr, "--count", "100", "--create-schema=false", "--stall-timeout", "1s")
	rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
	if !errors.Is(err, ErrWritesFailed) {
		t.Fatalf("error %v, want ErrWritesFailed", err)
	}
	if rep.Errors[StatusNoResponse] != rep.Sent || rep.Sent == 0 || !strings.Contains(rep.Aborted, "--stall-timeout") {
		t.Fatalf("report:\n%s", rep.String())
	}
	// Nothing was acknowledged, so nothing is missing.
	if rep.Verify == nil || rep.Verify.Checked != 0 || rep.Verify.Missing != 0 {
		t.Fatalf("verify = %+v", rep.Verify)
	}

	// A server that ends the stream without answering is reported too.
	addr = startFake(t, &fakeStreams{
		answer: func(*streamv1.WriteRequest) (string, bool) { return "", false },
	})
	rep, err = Run(runCtx(t), cfg.withTarget(addr), nil, testWriter{t})
	if !errors.Is(err, ErrWritesFailed) || rep.Errors[StatusNoResponse] != rep.Sent || len(rep.StreamErrors) == 0 {
		t.Fatalf("error %v, report:\n%s", err, rep.String())
	}
}

func (c Config) withTarget(addr string) Config {
	c.Target = addr
	return c
}

func TestRunDetectsMissing(t *testing.T) {
	succeed := modelv1.Status_STATUS_SUCCEED.String()
	// Acks everything, stores nothing.
	addr := startFake(t, &fakeStreams{
		answer: func(*streamv1.WriteRequest) (string, bool) { return succeed, true },
		query: func(*streamv1.QueryRequest) (*streamv1.QueryResponse, error) {
			return &streamv1.QueryResponse{}, nil
		},
	})
	cfg := parseConfig(t, "--target", addr, "--count", "200", "--entities", "3", "--create-schema=false")
	rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
	if !errors.Is(err, ErrMissing) || errors.Is(err, ErrWritesFailed) {
		t.Fatalf("error %v, want ErrMissing only", err)
	}
	if rep.Acked != 200 || rep.Verify.Missing != 200 || rep.Verify.Readable != 0 || len(rep.Verify.MissingSample) == 0 {
		t.Fatalf("report:\n%s", rep.String())
	}

	// A verification query that fails is reported as such, not as missing.
	addr = startFake(t, &fakeStreams{
		answer: func(*streamv1.WriteRequest) (string, bool) { return succeed, true },
		query: func(*streamv1.QueryRequest) (*streamv1.QueryResponse, error) {
			return nil, status.Error(codes.Unavailable, "node down")
		},
	})
	cfg = parseConfig(t, "--target", addr, "--count", "50", "--create-schema=false")
	rep, err = Run(runCtx(t), cfg, nil, testWriter{t})
	if !errors.Is(err, ErrVerify) || !strings.Contains(rep.Verify.Error, "node down") {
		t.Fatalf("error %v, verify %+v", err, rep.Verify)
	}
}

func TestHistogram(t *testing.T) {
	// Every value lands in a bucket whose upper edge is within 1/128 above it.
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 12345, 1 << 20, 1<<40 + 17} {
		hi := bucketHigh(bucketOf(v))
		if hi < v || float64(hi-v) > float64(v)/128+1 {
			t.Errorf("value %d: bucket upper edge %d", v, hi)
		}
		if v > 0 && bucketOf(v-1) > bucketOf(v) {
			t.Errorf("buckets not monotonic at %d", v)
		}
	}
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want uint64 // µs
	}{{0.5, 500_000}, {0.9, 900_000}, {0.99, 990_000}, {1, 1_000_000}} {
		got := h.quantile(tc.q)
		if got < tc.want || float64(got-tc.want) > float64(tc.want)/100 {
			t.Errorf("q%.2f = %d µs, want ≈ %d", tc.q, got, tc.want)
		}
	}
	if h.max != 1_000_000 {
		t.Errorf("max %d", h.max)
	}
}

// The pacer keeps the rate whatever the burst: message n is never sent
// more than --rate-burst before start + n/rate, and one due later waits
// exactly until it is due, so the messages due within the burst after it
// go at once.
func TestPacerBursts(t *testing.T) {
	start := time.Unix(1000, 0)
	p := newPacer(1000, 5*time.Millisecond, start) // one message a ms
	for _, tc := range []struct {
		n    int64
		now  time.Duration // after start
		want time.Duration
	}{
		{0, 0, 0},
		{5, 0, 0},                     // due in 5 ms: within the burst
		{6, 0, 6 * time.Millisecond},  // due in 6 ms: wait for it
		{11, 6 * time.Millisecond, 0}, // woke at 6 ms: due 11 ms goes
		{12, 6 * time.Millisecond, 6 * time.Millisecond},
		{13, 6 * time.Millisecond, 7 * time.Millisecond},
		{3, 50 * time.Millisecond, 0}, // late: at once
	} {
		if got := p.delay(tc.n, start.Add(tc.now)); got != tc.want {
			t.Errorf("message %d at +%s: wait %s, want %s", tc.n, tc.now, got, tc.want)
		}
	}
	smooth := newPacer(1000, 0, start)
	if got := smooth.delay(1, start); got != time.Millisecond {
		t.Errorf("--rate-burst 0: message 1 waits %s, want 1ms", got)
	}
	if newPacer(0, time.Millisecond, start) != nil {
		t.Error("rate 0 must mean no pacer")
	}
}
