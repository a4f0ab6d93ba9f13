package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Errors Run returns; test for them with errors.Is.
var (
	// ErrUnreachable: the target did not accept a connection or did not
	// answer the first call within --connect-timeout.
	ErrUnreachable = errors.New("bench: target unreachable")
	// ErrWritesFailed: some writes got a non-success status or no answer.
	ErrWritesFailed = errors.New("bench: writes failed")
	// ErrMissing: verification could not read back some acknowledged writes.
	ErrMissing = errors.New("bench: acknowledged writes missing")
	// ErrVerify: verification itself could not run to the end.
	ErrVerify = errors.New("bench: verification failed")
)

// StatusNoResponse counts messages sent but never answered (the stream
// broke, or the run hit --timeout or --stall-timeout).
const StatusNoResponse = "NO_RESPONSE"

// Report is the outcome of a run.
type Report struct {
	Target       string  `json:"target"`
	Kind         string  `json:"kind"`
	Group        string  `json:"group"`
	Name         string  `json:"name"`
	Streams      int     `json:"streams"`
	Entities     int     `json:"entities"`
	Shape        string  `json:"shape"`
	PayloadBytes int     `json:"payload_bytes"`
	Rate         float64 `json:"rate_limit"`
	// FlushSize is --flush-size; StreamsOpened counts the write streams
	// the writers opened (Streams without it).
	FlushSize     int64 `json:"flush_size,omitempty"`
	StreamsOpened int   `json:"streams_opened"`

	Sent      uint64 `json:"sent"`
	Acked     uint64 `json:"acked"`
	BytesSent uint64 `json:"bytes_sent"`
	// Errors counts non-success answers by status string, plus
	// StatusNoResponse for messages left unanswered.
	Errors     map[string]uint64 `json:"errors"`
	ErrorCount uint64            `json:"error_count"`
	// StreamErrors are the distinct errors that ended write streams early.
	StreamErrors []string `json:"stream_errors,omitempty"`
	// Aborted says why the write phase was cut short, if it was.
	Aborted string `json:"aborted,omitempty"`

	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// WriteSeconds runs from the first send to the last ack.
	WriteSeconds  float64 `json:"write_seconds"`
	AckedPerSec   float64 `json:"acked_per_sec"`
	MBPerSecSent  float64 `json:"mb_per_sec_sent"`
	LatencyMillis Latency `json:"ack_latency_ms"`
	// CPU is each measured process's CPU over the write phase: the load
	// tool's always, each --server-metrics server's when given.
	CPU []CPUUse `json:"cpu,omitempty"`

	Verify *VerifyReport `json:"verify,omitempty"`
}

// Latency is ack latency quantiles in milliseconds, per message from its
// send to its response.
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// VerifyReport is what reading acknowledged writes back found.
type VerifyReport struct {
	Checked  uint64  `json:"checked"`
	Readable uint64  `json:"readable"`
	Missing  uint64  `json:"missing"`
	Queries  uint64  `json:"queries"`
	Seconds  float64 `json:"seconds"`
	Error    string  `json:"error,omitempty"`
	// MissingSample lists a few missing message seqs for debugging.
	MissingSample []int64 `json:"missing_sample,omitempty"`
}

// Err is the run's verdict: nil only if every write was acknowledged and
// verification (if on) read every one of them back.
func (r *Report) Err() error {
	var errs []error
	if r.ErrorCount > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d not acknowledged (%s)", ErrWritesFailed, r.ErrorCount, r.Sent, r.errorList()))
	}
	if r.Aborted != "" && r.ErrorCount == 0 {
		errs = append(errs, fmt.Errorf("%w: %s", ErrWritesFailed, r.Aborted))
	}
	if v := r.Verify; v != nil {
		if v.Error != "" {
			errs = append(errs, fmt.Errorf("%w: %s", ErrVerify, v.Error))
		}
		if v.Missing > 0 {
			errs = append(errs, fmt.Errorf("%w: %d of %d acknowledged writes not readable", ErrMissing, v.Missing, v.Checked))
		}
	}
	return errors.Join(errs...)
}

func (r *Report) errorList() string {
	keys := slices.Sorted(maps.Keys(r.Errors))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, r.Errors[k])
	}
	return strings.Join(parts, " ")
}

// JSON is the report as one line of JSON.
func (r *Report) JSON() []byte {
	b, _ := json.Marshal(r)
	return b
}

// String is the report for people.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target          %s (%s %s/%s, %d streams, %d entities, %s shape, %d-byte payload", r.Target, r.Kind, r.Group, r.Name, r.Streams, r.Entities, r.Shape, r.PayloadBytes)
	if r.Rate > 0 {
		fmt.Fprintf(&b, ", rate limit %.0f/s", r.Rate)
	}
	if r.FlushSize > 0 {
		fmt.Fprintf(&b, ", a stream every %d messages as OAP flushes: %d opened", r.FlushSize, r.StreamsOpened)
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "sent            %d (%.1f MB)\n", r.Sent, float64(r.BytesSent)/1e6)
	fmt.Fprintf(&b, "acked           %d\n", r.Acked)
	if r.ErrorCount > 0 {
		fmt.Fprintf(&b, "errors          %d: %s\n", r.ErrorCount, r.errorList())
	} else {
		b.WriteString("errors          0\n")
	}
	for _, e := range r.StreamErrors {
		fmt.Fprintf(&b, "stream error    %s\n", e)
	}
	if r.Aborted != "" {
		fmt.Fprintf(&b, "aborted         %s\n", r.Aborted)
	}
	fmt.Fprintf(&b, "throughput      %.0f acked writes/s over %.2fs (first send to last ack), %.1f MB/s sent\n", r.AckedPerSec, r.WriteSeconds, r.MBPerSecSent)
	l := r.LatencyMillis
	fmt.Fprintf(&b, "ack latency ms  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", l.P50, l.P90, l.P99, l.Max)
	for _, c := range r.CPU {
		fmt.Fprintf(&b, "cpu             %.2f µs a write, %.2fs: %s\n", c.MicrosPerWrite, c.Seconds, c.Process)
	}
	if v := r.Verify; v != nil {
		fmt.Fprintf(&b, "verify          %d checked, %d readable, %d missing (%d queries, %.2fs)\n", v.Checked, v.Readable, v.Missing, v.Queries, v.Seconds)
		if len(v.MissingSample) > 0 {
			fmt.Fprintf(&b, "missing seqs    %v\n", v.MissingSample)
		}
		if v.Error != "" {
			fmt.Fprintf(&b, "verify error    %s\n", v.Error)
		}
	} else {
		b.WriteString("verify          off\n")
	}
	if err := r.Err(); err != nil {
		b.WriteString("result          FAIL\n")
	} else {
		b.WriteString("result          OK\n")
	}
	return b.String()
}
