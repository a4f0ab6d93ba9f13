// Package bench is banyand's load tool: it writes streams or measures
// through the public BanyanDB-compatible gRPC API over several concurrent
// bidi Write streams, measures per-message ack latency and throughput, and
// optionally reads every acknowledged write back to prove it is readable.
//
// Every message is distinct: stream elements carry a run-unique element id,
// and each measure data point is a unique (entity, timestamp) pair, so the
// verification is exact. Message seq i (0-based, global across streams)
// belongs to entity i mod E and has the timestamp base + (i div E) ms, where
// base is the run's start time truncated to the millisecond; the oap
// shape's metric steps a minute instead, from the run's start minute.
package bench

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of the flags.
const (
	DefaultCount        = 100000
	DefaultEntities     = 1000
	DefaultStreams      = 4
	DefaultShards       = 2
	DefaultPayloadBytes = 100
	// DefaultSpansPerTrace: a few segments a trace, as a request crossing
	// a few services.
	DefaultSpansPerTrace = 4
	DefaultMaxInFlight   = 2000
	DefaultConnect       = 5 * time.Second
	DefaultStall         = 30 * time.Second
	DefaultRateBurst     = time.Millisecond
	// runGrace is added to the expected run time to derive --timeout.
	runGrace = time.Minute
	// floorRate is the slowest throughput (msg/s) a count-bounded,
	// unlimited-rate run is assumed to reach when --timeout is derived.
	floorRate = 1000
)

// Kinds of data the tool writes.
const (
	KindStream  = "stream"
	KindMeasure = "measure"
	KindTrace   = "trace"
)

// Config is the bench command's settings.
type Config struct {
	// Target is host:port of a running liaison or standalone; empty with
	// Standalone.
	Target string
	// Standalone starts an in-process standalone on 127.0.0.1:0 with its
	// data in a temporary directory (removed at exit unless KeepData).
	Standalone bool
	// Cluster starts an in-process cluster instead: an embedded etcd, two
	// data nodes and a liaison, all on 127.0.0.1 (see startCluster).
	Cluster  bool
	KeepData bool

	Kind     string
	Group    string
	Name     string
	Shards   int
	Entities int
	// Shape is the tags of stream elements and measure data points:
	// ShapeRealistic, ShapeLight (shape.go) or ShapeOAP (oap.go).
	Shape        string
	PayloadBytes int
	// SpansPerTrace is how many spans make a trace (--kind trace).
	SpansPerTrace int
	// CreateSchema checks the group and stream/measure and creates them if
	// missing; off, the tool assumes they exist with its schema.
	CreateSchema bool

	// Streams is the number of concurrent writers: each writes one stream
	// for the whole run or, with FlushSize, its flushes one after another.
	Streams     int
	Count       int64         // 0 with Duration: DefaultCount
	Duration    time.Duration // exclusive with Count
	Rate        float64       // messages/s overall; 0 = unlimited
	RateBurst   time.Duration // a paced message may leave this much before it is due
	MaxInFlight int           // unacked messages per stream
	// FlushSize > 0 writes as SkyWalking OAP's bulk flushes do: each
	// stream carries FlushSize messages, the first with metadata and the
	// tag family / data point spec (names in alphabetical order), the rest
	// values only, then half-closes, waits for every answer and the
	// writer's next stream opens.
	FlushSize int64

	Verify optBool // auto: on for count-bounded runs
	JSON   bool

	ConnectTimeout time.Duration
	Timeout        time.Duration // 0: derived from count/duration
	StallTimeout   time.Duration

	// ServerMetrics are /metrics URLs whose process CPU the report shows.
	ServerMetrics []string

	// Profiles of the write phase, for finding what bounds throughput.
	Profiles Profiles
}

// RegisterFlags binds the config to flags with their defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Target, "target", "", "host:port of a running liaison or standalone (exclusive with --standalone)")
	fs.BoolVar(&c.Standalone, "standalone", false, "start an in-process standalone on 127.0.0.1:0 with data in a temporary directory and load it")
	fs.BoolVar(&c.Cluster, "cluster", false, "start an in-process cluster (embedded etcd, 2 data nodes, 1 liaison) on 127.0.0.1 with data in a temporary directory and load it")
	fs.BoolVar(&c.KeepData, "keep-data", false, "with --standalone or --cluster: keep the temporary data directory at exit (its path is printed)")
	fs.StringVar(&c.Kind, "kind", KindStream, "what to write: stream, measure or trace (spans: --payload-bytes is each span's size)")
	fs.StringVar(&c.Group, "group", "", "group to write to (created with --shards if missing; default bench_<kind>)")
	fs.StringVar(&c.Name, "name", "", "stream or measure to write to (created if missing; default bench_<kind>)")
	fs.IntVar(&c.Shards, "shards", DefaultShards, "shard_num of the group when the tool creates it")
	fs.IntVar(&c.Entities, "entities", DefaultEntities, "distinct entities (service, instance) the messages are spread over")
	fs.StringVar(&c.Shape, "shape", ShapeRealistic, "tags of stream elements and measure data points: realistic (seven of mixed types: service, instance and endpoint; "+
		"a --payload-bytes string, a string array, an int array and a 16-byte binary), light (service, instance and a --payload-bytes binary) "+
		"or oap (SkyWalking OAP 10.4's own layouts, schema and index rules: a measure is the minute metric sw_metricsMinute/service_resp_time_minute, "+
		"one point a service a minute; a stream is sw_recordsLog/log, OAP's log record with a --payload-bytes content); traces ignore it")
	fs.IntVar(&c.PayloadBytes, "payload-bytes", DefaultPayloadBytes, "size of each message's payload: the realistic shape's message string, the light shape's binary tag, "+
		"the oap stream's log content (the oap measure has none), a span's bytes with --kind trace")
	fs.IntVar(&c.SpansPerTrace, "spans-per-trace", DefaultSpansPerTrace, "with --kind trace: spans of one trace (consecutive spans of one service instance)")
	fs.BoolVar(&c.CreateSchema, "create-schema", true, "check the group and stream/measure and create them if missing; false assumes they exist with the tool's schema")
	fs.IntVar(&c.Streams, "streams", DefaultStreams, "concurrent client write streams; with --flush-size, concurrent writers, each writing its flushes one after another "+
		"(one stream at a time), so --streams 15 is SkyWalking OAP's 15 concurrent bulk flushes")
	fs.Int64Var(&c.Count, "count", 0, "total messages to write; default "+strconv.Itoa(DefaultCount)+" unless --duration is given (exclusive with --duration)")
	fs.DurationVar(&c.Duration, "duration", 0, "write for this long instead of a fixed --count, e.g. 30s")
	fs.Float64Var(&c.Rate, "rate", 0, "messages per second over all streams; 0 = as fast as acks allow")
	fs.DurationVar(&c.RateBurst, "rate-burst", DefaultRateBurst, "with --rate: a message may leave up to this long before it is due, so writes go out in bursts of at most this length, "+
		"as a client that batches sends them (fewer wake-ups on both sides); 0 paces every message on its own")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", DefaultMaxInFlight, "unacknowledged messages per stream; the writer waits at this many, so latency is not hidden in a client queue")
	fs.Int64Var(&c.FlushSize, "flush-size", 0, "write as SkyWalking OAP flushes: a new write stream every this many messages, the first with metadata and the spec "+
		"(tag families, tags and fields in alphabetical order, not the schema's), values only after, in the spec's order; 0 = one stream per writer for the whole run")
	c.Verify = optAuto
	fs.Var(&c.Verify, "verify", "after writing, query every acknowledged write back and report readable/missing; auto = true for --count runs, false for --duration runs")
	fs.Lookup("verify").NoOptDefVal = "true"
	fs.BoolVar(&c.JSON, "json", false, "print the final report as one JSON object on stdout")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", DefaultConnect, "how long to wait for the target to accept a connection and answer the first call")
	fs.DurationVar(&c.Timeout, "timeout", 0, "bound on the whole write phase; 0 derives it: duration (or count at --rate, or at 1000 msg/s) plus 1m")
	fs.DurationVar(&c.StallTimeout, "stall-timeout", DefaultStall, "give up when no response arrives for this long while messages are outstanding")
	fs.StringSliceVar(&c.ServerMetrics, "server-metrics", nil, "Prometheus /metrics URLs of the servers under load (banyand's --http-addr), comma-separated or repeated, e.g. http://127.0.0.1:17913/metrics: "+
		"the report adds each one's process CPU over the write phase, per acked write, next to the load tool's own")
	c.Profiles.registerFlags(fs)
}

// Validate reports every bad setting at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	inProcess := c.Standalone || c.Cluster
	switch {
	case c.Standalone && c.Cluster, inProcess && c.Target != "":
		bad("--target, --standalone and --cluster are exclusive: give one")
	case !inProcess && c.Target == "":
		bad("give --target host:port, --standalone or --cluster")
	case c.Target != "":
		if _, port, err := net.SplitHostPort(c.Target); err != nil {
			bad("--target %q: want host:port", c.Target)
		} else if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			bad("--target %q: port must be 1..65535", c.Target)
		}
	}
	if c.KeepData && !inProcess {
		bad("--keep-data needs --standalone or --cluster")
	}
	for _, m := range c.ServerMetrics {
		if u, err := url.Parse(m); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("--server-metrics %q: want an http(s) URL such as http://127.0.0.1:17913/metrics", m)
		}
	}
	if c.Kind != KindStream && c.Kind != KindMeasure && c.Kind != KindTrace {
		bad("--kind %q: want stream, measure or trace", c.Kind)
	}
	if c.Shape != ShapeRealistic && c.Shape != ShapeLight && c.Shape != ShapeOAP {
		bad("--shape %q: want realistic, light or oap", c.Shape)
	}
	if c.SpansPerTrace < 1 || c.SpansPerTrace > 10_000 {
		bad("--spans-per-trace %d: want 1..10000", c.SpansPerTrace)
	}
	if c.Shards < 1 || c.Shards > 1024 {
		bad("--shards %d: want 1..1024", c.Shards)
	}
	if c.Entities < 1 || c.Entities > 10_000_000 {
		bad("--entities %d: want 1..10000000", c.Entities)
	}
	if c.PayloadBytes < 0 || c.PayloadBytes > 4<<20 {
		bad("--payload-bytes %d: want 0..%d", c.PayloadBytes, 4<<20)
	}
	if c.Streams < 1 || c.Streams > 1024 {
		bad("--streams %d: want 1..1024", c.Streams)
	}
	switch {
	case c.Count < 0:
		bad("--count %d: must be positive", c.Count)
	case c.Duration < 0:
		bad("--duration %s: must be positive", c.Duration)
	case c.Count > 0 && c.Duration > 0:
		bad("--count and --duration are exclusive: give one")
	}
	if c.Rate < 0 || c.Rate != c.Rate {
		bad("--rate %v: must be 0 (unlimited) or positive", c.Rate)
	}
	if c.RateBurst < 0 || c.RateBurst > time.Second {
		bad("--rate-burst %s: want 0..1s", c.RateBurst)
	}
	if c.FlushSize < 0 {
		bad("--flush-size %d: want 0 (off) or more", c.FlushSize)
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > 1_000_000 {
		bad("--max-in-flight %d: want 1..1000000", c.MaxInFlight)
	}
	if c.ConnectTimeout <= 0 {
		bad("--connect-timeout %s: must be positive", c.ConnectTimeout)
	}
	if c.Timeout < 0 {
		bad("--timeout %s: must be positive, or 0 to derive it", c.Timeout)
	}
	if c.StallTimeout <= 0 {
		bad("--stall-timeout %s: must be positive", c.StallTimeout)
	}
	return errors.Join(errs...)
}

// resolved fills the derived settings: the default name and count, verify's
// auto value and the run timeout.
func (c Config) resolved() Config {
	if l := oapLayoutOf(c.Kind); c.Shape == ShapeOAP && l != nil {
		// OAP's own group and name, unless told otherwise.
		if c.Group == "" {
			c.Group = l.model.Group
		}
		if c.Name == "" {
			c.Name = l.model.Name
		}
	}
	if c.Group == "" {
		c.Group = "bench_" + c.Kind
	}
	if c.Name == "" {
		c.Name = "bench_" + c.Kind
		if c.Shape == ShapeLight && c.Kind != KindTrace {
			c.Name += "_light" // the shapes' schemas differ
		}
	}
	if c.Count == 0 && c.Duration == 0 {
		c.Count = DefaultCount
	}
	if c.Verify == optAuto {
		c.Verify = optFalse
		if c.Count > 0 {
			c.Verify = optTrue
		}
	}
	if c.Timeout == 0 {
		expected := c.Duration
		if c.Count > 0 {
			rate := c.Rate
			if rate == 0 || rate > floorRate {
				rate = floorRate
			}
			expected = time.Duration(float64(c.Count) / rate * float64(time.Second))
		}
		c.Timeout = expected + runGrace
	}
	return c
}

// optBool is a boolean flag with a third, default state: auto.
type optBool int8

const (
	optAuto optBool = iota
	optFalse
	optTrue
)

func (b *optBool) String() string {
	switch *b {
	case optTrue:
		return "true"
	case optFalse:
		return "false"
	}
	return "auto"
}

func (b *optBool) Set(s string) error {
	if s == "auto" {
		*b = optAuto
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false or auto")
	}
	*b = optFalse
	if v {
		*b = optTrue
	}
	return nil
}

func (b *optBool) Type() string { return "bool" }
