package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// drainGrace is how long an interrupted run (ctx cancelled) still waits for
// the responses of messages already sent.
const drainGrace = 5 * time.Second

// Run executes one load run as cfg says: it starts an in-process standalone
// if asked, creates the schema if missing, writes, verifies, writes the
// final report to out (text or JSON) and progress lines to progress (nil
// discards them). The error is nil only for a clean run: every write
// acknowledged and, with verification, read back; otherwise it wraps one
// of the Err… values. A run that could not start (bad config, unreachable
// target) returns an empty report and prints none.
func Run(ctx context.Context, cfg Config, out, progress io.Writer) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, fmt.Errorf("invalid configuration: %w", err)
	}
	cfg = cfg.resolved()
	if progress == nil {
		progress = io.Discard
	}
	if out == nil {
		out = io.Discard
	}
	target := cfg.Target
	if cfg.Standalone || cfg.Cluster {
		start := startStandalone
		if cfg.Cluster {
			start = startCluster
		}
		p, err := start(ctx, cfg.KeepData, progress)
		if err != nil {
			return Report{}, err
		}
		defer func() {
			if err := p.stop(); err != nil {
				fmt.Fprintf(progress, "bench: stopping the in-process %s: %v\n", p.what, err)
			}
		}()
		target = p.addr
	}
	// A TCP probe gives a clear, quick error for a refused or unroutable
	// target; gRPC itself would only report it when the first call fails.
	probe, err := (&net.Dialer{Timeout: cfg.ConnectTimeout}).DialContext(ctx, "tcp", target)
	if err != nil {
		return Report{}, fmt.Errorf("%w: %s: %w", ErrUnreachable, target, err)
	}
	_ = probe.Close()
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(4<<20), grpc.WithInitialConnWindowSize(8<<20),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.ForceCodecV2(wire.Codec())))
	if err != nil {
		return Report{}, fmt.Errorf("%w: %s: %w", ErrUnreachable, target, err)
	}
	defer func() { _ = conn.Close() }()

	msgs, err := newMessages(cfg)
	if err != nil {
		return Report{}, err
	}
	var w workload = newStreamWorkload(msgs, conn)
	switch cfg.Kind {
	case KindMeasure:
		w = newMeasureWorkload(msgs, conn)
	case KindTrace:
		w = newTraceWorkload(msgs, conn)
	}
	if cfg.CreateSchema {
		if err := ensureSchema(ctx, conn, cfg, cfg.ConnectTimeout); err != nil {
			return Report{}, err
		}
		if err := waitServing(ctx, w, msgs); err != nil {
			return Report{}, err
		}
	}

	rep := Report{
		Target: target, Kind: cfg.Kind, Group: cfg.Group, Name: cfg.Name,
		Streams: cfg.Streams, Entities: cfg.Entities, Shape: cfg.Shape, PayloadBytes: cfg.PayloadBytes, Rate: cfg.Rate, FlushSize: cfg.FlushSize,
		Errors: map[string]uint64{},
	}
	stopProfiles, err := cfg.Profiles.start()
	if err != nil {
		return Report{}, err
	}
	cpu := newCPUSampler(cfg)
	if err := cpu.begin(ctx); err != nil {
		if len(cfg.ServerMetrics) > 0 {
			return Report{}, err
		}
		fmt.Fprintln(progress, "bench: no CPU figures:", err)
		cpu = nil
	}
	acked := writePhase(ctx, cfg, w, &rep, progress)
	if cpu != nil {
		if rep.CPU, err = cpu.end(ctx, rep.Acked); err != nil {
			fmt.Fprintln(progress, "bench: no CPU figures:", err)
		}
	}
	if err := stopProfiles(); err != nil {
		fmt.Fprintln(progress, "bench: writing profiles:", err)
	}
	if cfg.Verify == optTrue {
		if ctx.Err() != nil {
			rep.Verify = &VerifyReport{Checked: uint64(len(acked)), Error: "interrupted before verification"}
		} else {
			fmt.Fprintf(progress, "verifying %d acknowledged writes...\n", len(acked))
			rep.Verify = verify(ctx, w, msgs, acked, cfg.Streams)
		}
	}
	if cfg.JSON {
		fmt.Fprintf(out, "%s\n", rep.JSON())
	} else {
		fmt.Fprint(out, rep.String())
	}
	return rep, rep.Err()
}

func newMessages(cfg Config) (*messages, error) {
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("random run id: %w", err)
	}
	nonce, err := rand.Int(rand.Reader, big.NewInt(1<<31))
	if err != nil {
		return nil, fmt.Errorf("random run id: %w", err)
	}
	payload := make([]byte, cfg.PayloadBytes)
	_, _ = rand.Read(payload)
	m := &messages{
		md:         &commonv1.Metadata{Group: cfg.Group, Name: cfg.Name},
		entities:   int64(cfg.Entities),
		baseMillis: time.Now().UnixMilli(),
		runID:      "b" + hex.EncodeToString(id[:]),
		nonce:      float64(nonce.Int64()) + 0.5,
		payload:    payload,
		measure:    cfg.Kind == KindMeasure,
		shape:      cfg.Shape,
		data:       dataTags(cfg.Shape, payload),
		spec:       cfg.FlushSize > 0,
	}
	if cfg.Kind == KindTrace {
		m.spansPerTrace = int64(max(cfg.SpansPerTrace, 1))
	}
	m.stepMillis = 1
	if l := oapLayoutOf(cfg.Kind); cfg.Shape == ShapeOAP && l != nil {
		// Time buckets: a minute metric's points are at whole minutes.
		m.oap, m.stepMillis = &oapEncoding{layout: l}, l.stepMillis
		m.baseMillis -= m.baseMillis % l.stepMillis
	}
	m.cacheEntityTags()
	if err := m.encode(); err != nil {
		return nil, fmt.Errorf("encode the run's requests: %w", err)
	}
	return m, nil
}

// writePhase runs the write streams, prints progress, fills rep and
// returns the acknowledged seqs (when verifying).
//
// Contexts: sends stop when ctx is done (interrupt) or --duration passes;
// the streams themselves live until every message is answered, the run's
// --timeout passes, no response came for --stall-timeout, or drainGrace
// after an interrupt.
func writePhase(ctx context.Context, cfg Config, w workload, rep *Report, progress io.Writer) []int64 {
	start := time.Now()
	r := &writeRun{cfg: cfg, w: w, pace: newPacer(cfg.Rate, cfg.RateBurst, start), start: start}

	runCtx, abort := context.WithCancelCause(context.WithoutCancel(ctx))
	defer abort(nil)
	timeout := time.AfterFunc(cfg.Timeout, func() {
		abort(fmt.Errorf("run timeout %s reached (--timeout)", cfg.Timeout))
	})
	defer timeout.Stop()
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	if cfg.Duration > 0 {
		sendCtx, stopSending = context.WithTimeout(ctx, cfg.Duration)
		defer stopSending()
	}

	perWriter := make([][]*streamResult, cfg.Streams)
	var wg sync.WaitGroup
	for i := range perWriter {
		wg.Go(func() { perWriter[i] = r.writer(runCtx, sendCtx, cfg.Verify == optTrue) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	interrupted := ctx.Done()
	var lastAcked uint64
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-interrupted:
			interrupted = nil
			fmt.Fprintf(progress, "interrupted: waiting up to %s for outstanding responses\n", drainGrace)
			drain := time.AfterFunc(drainGrace, func() { abort(errors.New("interrupted")) })
			defer drain.Stop()
		case <-tick.C:
			el := r.since()
			acked, failed, sent := r.acked.Load(), r.failed.Load(), r.sent.Load()
			fmt.Fprintf(progress, "[%5.0fs] %7d acked/s  sent %d  acked %d  errors %d  in-flight %d  max ack %.1f ms\n",
				el.Seconds(), acked-lastAcked, sent, acked, failed, sent-acked-failed,
				float64(r.slowest.Swap(0))/float64(time.Millisecond))
			lastAcked = acked
			if outstanding := sent - acked - failed; outstanding > 0 &&
				el-time.Duration(r.lastResp.Load()) > cfg.StallTimeout {
				abort(fmt.Errorf("no response for %s with %d messages outstanding (--stall-timeout)", cfg.StallTimeout, outstanding))
			}
		}
	}
	if err := context.Cause(runCtx); err != nil {
		rep.Aborted = err.Error()
	} else if ctx.Err() != nil {
		rep.Aborted = "interrupted"
	}
	rep.ElapsedSeconds = r.since().Seconds()
	results := slices.Concat(perWriter...)
	rep.StreamsOpened = len(results)
	return collect(results, rep)
}

// collect merges the streams' results into rep.
func collect(results []*streamResult, rep *Report) []int64 {
	var hist histogram
	var acked []int64
	var first, last time.Duration
	haveFirst := false
	streamErrs := map[string]int{}
	for _, res := range results {
		rep.Sent += res.sent
		rep.BytesSent += res.bytes
		rep.Acked += res.acked
		for st, n := range res.errors {
			rep.Errors[st] += n
			rep.ErrorCount += n
		}
		hist.merge(&res.hist)
		acked = append(acked, res.ackedSeqs...)
		if res.hasSend && (!haveFirst || res.firstSend < first) {
			first, haveFirst = res.firstSend, true
		}
		last = max(last, res.lastResp)
		if res.streamErr != nil {
			streamErrs[res.streamErr.Error()]++
		}
	}
	for e, n := range streamErrs {
		if n > 1 {
			e = fmt.Sprintf("%s (%d streams)", e, n)
		}
		rep.StreamErrors = append(rep.StreamErrors, e)
	}
	sort.Strings(rep.StreamErrors)
	// A stream that could not even open sent nothing; say so.
	if rep.Sent == 0 && len(rep.StreamErrors) > 0 && rep.Aborted == "" {
		rep.Aborted = "no write stream could send: " + strings.Join(rep.StreamErrors, "; ")
	}
	if haveFirst && last > first {
		rep.WriteSeconds = (last - first).Seconds()
		rep.AckedPerSec = float64(rep.Acked) / rep.WriteSeconds
		rep.MBPerSecSent = float64(rep.BytesSent) / 1e6 / rep.WriteSeconds
	}
	ms := func(us uint64) float64 { return float64(us) / 1000 }
	rep.LatencyMillis = Latency{P50: ms(hist.quantile(0.50)), P90: ms(hist.quantile(0.90)), P99: ms(hist.quantile(0.99)), Max: ms(hist.max)}
	return slices.Clip(acked)
}
