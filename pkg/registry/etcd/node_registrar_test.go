package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

func TestNodeConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  NodeConfig
		ok   bool
	}{
		{"defaults", NodeConfig{}, true},
		{"custom", NodeConfig{Namespace: "/prod", TTL: 2 * time.Second}, true},
		{"trailing slash", NodeConfig{Namespace: "prod/"}, false},
		{"sub-second TTL", NodeConfig{TTL: 500 * time.Millisecond}, false},
		{"fractional TTL", NodeConfig{TTL: 1500 * time.Millisecond}, false},
		{"backoff inverted", NodeConfig{RetryMin: time.Second, RetryMax: time.Millisecond}, false},
		{"negative stop", NodeConfig{StopTimeout: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if got := (NodeConfig{}).withDefaults(); got.nodesPrefix() != DefaultNamespace+"/nodes/" || got.TTL != 5*time.Second {
		t.Fatalf("defaults: prefix %q TTL %s", got.nodesPrefix(), got.TTL)
	}
}

// A node that dies without deregistering (its client vanishes, its lease is
// never revoked) disappears from watchers once its lease expires.
func TestNodeCrashedNodeDisappearsWithinTTL(t *testing.T) {
	srv := etcdtest.Start(t)
	regCli := newNodeTestClient(t, srv)
	cfg := nodeTestConfig()
	cfg.StopTimeout = 100 * time.Millisecond // its revoke cannot succeed
	reg, err := NewNodeRegistrar(cfg, regCli, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startNodeWatch(t, srv.Client(), nil)

	stop, _ := runRegister(t, reg, testDataNode("d1", "127.0.0.1:17912"))
	waitNode(t, 5*time.Second, "d1 visible", func() bool { return w.addr("d1") != "" })
	// Let a few renewals happen so the lease was renewed, not just granted.
	waitNode(t, 5*time.Second, "renewals", func() bool { return reg.Stats().Renewals >= 2 })

	crashed := time.Now()
	// The "crash": the client vanishes and no revoke reaches etcd. The
	// registrar keeps running, as a hung process would, retrying in vain.
	_ = regCli.Close()
	// Expiry: TTL after the last renewal, plus etcd's 0.5 s expiry sweep;
	// the margin absorbs -race and a loaded machine.
	limit := nodeTestTTL + time.Second + 500*time.Millisecond
	waitNode(t, limit, "d1 gone", func() bool { return w.addr("d1") == "" })
	took := time.Since(crashed)
	t.Logf("crashed node disappeared from the watcher after %s (TTL %s, bound %s)", took.Round(time.Millisecond), nodeTestTTL, limit)
	if err := stop(); err == nil {
		t.Fatal("Register claims a clean deregistration through a closed client")
	}
	if evs := w.events("d1"); evs[len(evs)-1].Type != node.EventDelete {
		t.Fatalf("last event %v, want delete", evs[len(evs)-1].Type)
	}
}

// Keep-alive holds a node for many TTLs.
func TestNodeKeepAliveOutlivesTTL(t *testing.T) {
	t.Parallel() // mostly waiting
	srv := etcdtest.Start(t)
	// 2 s rather than the 1 s floor: keep-alives go out every TTL/3, and on
	// a loaded 2-core CI machine under -race a 1 s lease can lapse for
	// reasons that are the machine's, not the registrar's.
	const ttl = 2 * time.Second
	cfg := nodeTestConfig()
	cfg.TTL = ttl
	reg, err := NewNodeRegistrar(cfg, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startNodeWatch(t, srv.Client(), nil)
	runRegister(t, reg, testDataNode("d1", "127.0.0.1:17912"))
	waitNode(t, 5*time.Second, "d1 visible", func() bool { return w.addr("d1") != "" })

	// An observation window, not a wait for a condition: the node must
	// stay for 3 TTLs.
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		if w.addr("d1") == "" {
			t.Fatal("d1 dropped while its registrar was alive")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if evs := w.events("d1"); len(evs) != 1 || evs[0].Type != node.EventAdd {
		t.Fatalf("events %v, want one add", evs)
	}
	if s := reg.Stats(); s.Renewals < 3 || s.Losses != 0 || s.Registrations != 1 {
		t.Fatalf("stats %+v: want >= 3 renewals, no loss, 1 registration", s)
	}
	if len(getNodeKV(t, srv.Client(), "d1").Kvs) != 1 {
		t.Fatal("key gone")
	}
}

// After etcd restarts, the node is registered again on its own, whether
// its lease survived or not, and watchers see it. (A restart with clients
// connected takes etcd about 7 s: it waits for their streams to end.)
func TestNodeReregistersAfterEtcdRestart(t *testing.T) {
	t.Run("lease survives", func(t *testing.T) {
		t.Parallel()
		srv := etcdtest.Start(t)
		cfg := nodeTestConfig()
		cfg.TTL = 20 * time.Second // longer than the restart
		reg, err := NewNodeRegistrar(cfg, srv.Client(), nil)
		if err != nil {
			t.Fatal(err)
		}
		cli := srv.Client()
		w := startNodeWatch(t, cli, nil)
		runRegister(t, reg, testDataNode("d1", "127.0.0.1:17912"))
		waitNode(t, 5*time.Second, "d1 visible", func() bool { return w.addr("d1") != "" })
		first := getNodeKV(t, cli, "d1").Kvs[0].Lease
		// Until its first renewal the client gives a lease only 5 s, less
		// than the restart takes.
		waitNode(t, 5*time.Second, "first renewal", func() bool { return reg.Stats().Renewals >= 1 })

		srv.Restart()
		renewed := reg.Stats().Renewals
		waitNode(t, 15*time.Second, "renewal after restart", func() bool { return reg.Stats().Renewals > renewed })
		waitNode(t, 5*time.Second, "d1 visible after restart", func() bool { return w.addr("d1") != "" })
		if lease := assertNodeLeaseAlive(t, cli, "d1"); lease != first {
			t.Fatalf("key moved from lease %x to %x though the lease survived", first, lease)
		}
		if s := reg.Stats(); s.Losses != 0 || s.Registrations != 1 {
			t.Fatalf("stats %+v, want no loss", s)
		}
	})
	t.Run("lease lost", func(t *testing.T) {
		t.Parallel()
		srv := etcdtest.Start(t)
		reg := newTestRegistrar(t, srv.Client(), nil)
		cli := srv.Client()
		w := startNodeWatch(t, cli, nil)
		runRegister(t, reg, testDataNode("d1", "127.0.0.1:17912"))
		waitNode(t, 5*time.Second, "d1 visible", func() bool { return w.addr("d1") != "" })
		first := getNodeKV(t, cli, "d1").Kvs[0].Lease

		srv.Stop()
		// With no answer for a whole TTL the client gives the lease up.
		waitNode(t, 10*time.Second, "lease loss noticed", func() bool { return reg.Stats().Losses >= 1 })
		srv.Restart()
		waitNode(t, 15*time.Second, "re-registration", func() bool { return reg.Stats().Registrations >= 2 })
		waitNode(t, 5*time.Second, "d1 visible after restart", func() bool { return w.addr("d1") != "" })
		if lease := assertNodeLeaseAlive(t, cli, "d1"); lease == first {
			t.Fatalf("key still on the lost lease %x", lease)
		}
		renewed := reg.Stats().Renewals
		waitNode(t, 5*time.Second, "renewals of the new lease", func() bool { return reg.Stats().Renewals >= renewed+3 })
		t.Logf("stats %+v", reg.Stats())
	})
}

// assertNodeLeaseAlive checks the key exists on a lease etcd still keeps,
// and returns the lease.
func assertNodeLeaseAlive(t *testing.T, cli *clientv3.Client, name string) int64 {
	t.Helper()
	kvs := getNodeKV(t, cli, name).Kvs
	if len(kvs) != 1 || kvs[0].Lease == 0 {
		t.Fatalf("key of %s: %v, want one leased key", name, kvs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(kvs[0].Lease))
	// TTL is whole seconds left, so 0 for a 1 s lease; -1 means gone.
	if err != nil || ttl.TTL < 0 || ttl.GrantedTTL <= 0 {
		t.Fatalf("lease %x of %s: ttl %v, err %v", kvs[0].Lease, name, ttl, err)
	}
	return kvs[0].Lease
}

// A node restarting after a crash finds its own key, still alive on the old
// process's lease, and takes it over; a key nobody keeps alive is taken over
// whatever it holds.
func TestNodeReplacesStaleKey(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, oldAddr string
		leased        bool
	}{
		{"own key on a live lease", "127.0.0.1:17912", true},
		{"other address without lease", "10.0.0.9:1", false},
		{"garbage on a live lease", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			val := []byte("\xff\xfe not a node")
			if tc.oldAddr != "" {
				val, _ = proto.Marshal(testDataNode(name, tc.oldAddr))
			}
			var opts []clientv3.OpOption
			var old clientv3.LeaseID
			if tc.leased {
				g, err := cli.Grant(ctx, 60) // the crashed process's lease, far from expiry
				if err != nil {
					t.Fatal(err)
				}
				old = g.ID
				opts = append(opts, clientv3.WithLease(old))
			}
			if _, err := cli.Put(ctx, nodeTestConfig().nodeKey(name), string(val), opts...); err != nil {
				t.Fatal(err)
			}

			reg := newTestRegistrar(t, cli, nil)
			n := testDataNode(name, "127.0.0.1:17912")
			n.Labels = map[string]string{"boot": "2"}
			stop, done := runRegister(t, reg, n)
			waitNode(t, 5*time.Second, "registration", func() bool { return reg.Stats().Registrations == 1 })
			kv := getNodeKV(t, cli, name).Kvs[0]
			got := testDataNode("", "")
			if err := proto.Unmarshal(kv.Value, got); err != nil || got.GetLabels()["boot"] != "2" {
				t.Fatalf("key holds %v (err %v), want the new registration", got, err)
			}
			if clientv3.LeaseID(kv.Lease) == old {
				t.Fatal("key still on the old lease")
			}
			select {
			case err := <-done:
				t.Fatalf("Register returned early: %v", err)
			default:
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A different live address under the same name is a configuration error,
// reported at once; the holder keeps its key and no lease is left behind.
func TestNodeNameTaken(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	holder := newTestRegistrar(t, cli, nil)
	runRegister(t, holder, testDataNode("d1", "10.0.0.1:17912"))
	waitNode(t, 5*time.Second, "holder registered", func() bool { return holder.Stats().Registrations == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := newTestRegistrar(t, cli, nil).Register(ctx, testDataNode("d1", "10.0.0.2:17912"))
	if !errors.Is(err, node.ErrNodeNameTaken) {
		t.Fatalf("Register = %v, want ErrNodeNameTaken", err)
	}
	if !strings.Contains(err.Error(), "10.0.0.1:17912") {
		t.Errorf("error %q does not name the holder's address", err)
	}
	t.Logf("error: %v", err)
	kv := getNodeKV(t, cli, "d1").Kvs[0]
	got := testDataNode("", "")
	if err := proto.Unmarshal(kv.Value, got); err != nil || got.GetGrpcAddress() != "10.0.0.1:17912" {
		t.Fatalf("holder's key now %v (err %v)", got, err)
	}
	leases, err := cli.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 1 {
		t.Fatalf("%d leases, want only the holder's", len(leases.Leases))
	}
}

// A clean stop deletes the key before Register returns.
func TestNodeCleanStopDeletesKey(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	w := startNodeWatch(t, cli, nil)
	reg := newTestRegistrar(t, cli, nil)
	stop, _ := runRegister(t, reg, testDataNode("d1", "127.0.0.1:17912"))
	waitNode(t, 5*time.Second, "d1 visible", func() bool { return w.addr("d1") != "" })
	if err := stop(); err != nil {
		t.Fatalf("Register = %v, want nil after a clean stop", err)
	}
	if kvs := getNodeKV(t, cli, "d1").Kvs; len(kvs) != 0 {
		t.Fatalf("key still there after stop: %v", kvs)
	}
	// The key is gone at once; watchers hear of it through their watch.
	waitNode(t, 2*time.Second, "watcher sees d1 gone", func() bool { return w.addr("d1") == "" })
}

// A lease that disappears under a live registrar (expired during a stall,
// revoked by an operator) is replaced and the key written again.
func TestNodeLostLeaseIsRegrantedAndKeyRewritten(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	w := startNodeWatch(t, cli, nil)
	reg := newTestRegistrar(t, srv.Client(), nil)
	runRegister(t, reg, testDataNode("d1", "127.0.0.1:17912"))
	waitNode(t, 5*time.Second, "d1 visible", func() bool { return w.addr("d1") != "" })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease := getNodeKV(t, cli, "d1").Kvs[0].Lease
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(lease)); err != nil {
		t.Fatal(err)
	}
	waitNode(t, 5*time.Second, "re-registration", func() bool { return reg.Stats().Registrations == 2 })
	waitNode(t, 5*time.Second, "d1 back", func() bool { return w.addr("d1") != "" })
	if s := reg.Stats(); s.Losses != 1 {
		t.Fatalf("stats %+v, want 1 loss", s)
	}
	if got := assertNodeLeaseAlive(t, cli, "d1"); got == lease {
		t.Fatal("key on the revoked lease")
	}
	var types []node.EventType
	for _, e := range w.events("d1") {
		types = append(types, e.Type)
	}
	if len(types) != 3 || types[0] != node.EventAdd || types[1] != node.EventDelete || types[2] != node.EventAdd {
		t.Fatalf("events %v, want add, delete, add", types)
	}
}

func TestNodeRegisterRejectsInvalidNode(t *testing.T) {
	srv := etcdtest.Start(t)
	err := newTestRegistrar(t, srv.Client(), nil).Register(context.Background(), testDataNode("d1", ""))
	if !errors.Is(err, node.ErrInvalidNode) {
		t.Fatalf("Register = %v, want ErrInvalidNode", err)
	}
}
