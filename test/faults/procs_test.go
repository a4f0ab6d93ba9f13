//go:build faults

package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// readyTimeout bounds every wait for a process to become ready.
const readyTimeout = 30 * time.Second

// pollInterval is the pause between two checks of a condition.
const pollInterval = 50 * time.Millisecond

var (
	binDir   string // set by TestMain
	buildMu  sync.Mutex
	builtBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "banyand-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// banyandBinary builds cmd/banyand once per test binary and returns its path.
func banyandBinary(t *testing.T) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if builtBin != "" {
		return builtBin
	}
	out := filepath.Join(binDir, "banyand")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, "github.com/banyand-io/banyand/cmd/banyand")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build banyand: %v\n%s", err, b)
	}
	t.Logf("built %s in %s", out, time.Since(start).Round(time.Millisecond))
	builtBin = out
	return out
}

// etcdBinary returns the etcd on PATH or skips the test.
func etcdBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd binary on PATH: the fault suite needs a real etcd (Debian: apt-get install etcd-server)")
	}
	return p
}

// freeAddr returns 127.0.0.1:port with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// proc is one child process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has been waited for
	err     error         // Wait's result, valid after done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig (SIGSTOP, SIGCONT) to a running process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: signal %s: %v", p.name, sig, err)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// cluster is a set of real processes started by one test: etcd, data
// nodes and liaisons. Every process is killed by t.Cleanup.
type cluster struct {
	t     *testing.T
	bin   string
	dir   string
	etcd  string // client endpoint host:port
	etcdP *proc

	mu    sync.Mutex
	procs []*proc
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	etcdBin := etcdBinary(t)
	c := &cluster{t: t, bin: banyandBinary(t), dir: t.TempDir()}
	t.Cleanup(c.cleanup)
	c.startEtcd(etcdBin)
	return c
}

// cleanup kills every process still running and, on failure, shows the
// end of each process's log.
func (c *cluster) cleanup() {
	c.mu.Lock()
	procs := c.procs
	c.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	if c.t.Failed() {
		for _, p := range procs {
			c.t.Logf("---- last lines of %s (%s) ----\n%s", p.name, p.logPath, tail(p.logPath, 40))
		}
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// start runs bin args as a child whose output goes to a log file in the
// cluster's directory.
func (c *cluster) start(name, bin string, args ...string) *proc {
	c.t.Helper()
	c.mu.Lock()
	logPath := filepath.Join(c.dir, fmt.Sprintf("%s.%d.log", name, len(c.procs)))
	c.mu.Unlock()
	logf, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Children die with the test process even if it is killed itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		c.t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

// waitReady polls ready until it returns nil, failing the test if p exits
// or readyTimeout passes.
func (c *cluster) waitReady(p *proc, what string, ready func(ctx context.Context) error) {
	c.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := ready(ctx)
		cancel()
		if err == nil {
			return
		}
		if p.exited() {
			c.t.Fatalf("%s exited before it was ready (%v); log:\n%s", p.name, p.err, tail(p.logPath, 40))
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not ready within %s: %v", what, readyTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

func (c *cluster) startEtcd(bin string) {
	c.t.Helper()
	client, peer := freeAddr(c.t), freeAddr(c.t)
	p := c.start("etcd", bin,
		"--name", "faults",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", "http://"+client,
		"--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer,
		"--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "faults=http://"+peer,
		"--log-level", "warn")
	c.etcd, c.etcdP = client, p
	hc := &http.Client{Timeout: time.Second}
	c.waitReady(p, "etcd", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+client+"/health", http.NoBody)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"true"`) {
			return fmt.Errorf("etcd /health: %d %s", resp.StatusCode, b)
		}
		return nil
	})
}

// dataNode is one data node's stable identity: a restart reuses it.
type dataNode struct {
	name string
	addr string
	dir  string
	args []string // extra flags, e.g. --advertise-addr
	p    *proc
}

func (c *cluster) newDataNode(i int, args ...string) *dataNode {
	c.t.Helper()
	d := c.dataNodeSpec(i)
	d.args = args
	c.startDataNode(d)
	return d
}

// dataNodeSpec returns data node i's identity without starting it.
func (c *cluster) dataNodeSpec(i int) *dataNode {
	return &dataNode{name: "data-" + strconv.Itoa(i), addr: freeAddr(c.t), dir: filepath.Join(c.dir, "data-"+strconv.Itoa(i))}
}

// startDataNode (re)starts d and waits until its cluster port serves.
func (c *cluster) startDataNode(d *dataNode) {
	c.t.Helper()
	d.p = c.start(d.name, c.bin, c.dataNodeArgs(d)...)
	c.waitReady(d.p, d.name, grpcServing(c.t, d.addr))
}

// dataNodeArgs is d's command line.
func (c *cluster) dataNodeArgs(d *dataNode) []string {
	return append([]string{"storage",
		"--node-name", d.name,
		"--grpc-addr", d.addr,
		"--http-addr", "",
		"--data-path", d.dir,
		"--etcd-endpoints", c.etcd,
		"--node-lease-ttl", "2s"}, d.args...)
}

// liaison is a liaison's client address and flags, kept across restarts.
type liaison struct {
	addr string
	args []string // extra flags, e.g. publisher settings
	p    *proc
}

func (c *cluster) newLiaison(args ...string) *liaison {
	c.t.Helper()
	l := &liaison{addr: freeAddr(c.t), args: args}
	c.startLiaison(l)
	return l
}

// startLiaison (re)starts l on its address and waits until it serves.
func (c *cluster) startLiaison(l *liaison) {
	c.t.Helper()
	l.p = c.start("liaison", c.bin, append([]string{"liaison",
		"--grpc-addr", l.addr,
		"--http-addr", "",
		"--etcd-endpoints", c.etcd}, l.args...)...)
	c.waitReady(l.p, "liaison", grpcServing(c.t, l.addr))
}

// grpcServing checks the gRPC health service at addr.
func grpcServing(t *testing.T, addr string) func(ctx context.Context) error {
	conn := dial(t, addr)
	hc := healthpb.NewHealthClient(conn)
	return func(ctx context.Context) error {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		if r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return errors.New(r.GetStatus().String())
		}
		return nil
	}
}

// dial returns a client connection that reconnects quickly: the suite
// restarts servers on the same address.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 250 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
