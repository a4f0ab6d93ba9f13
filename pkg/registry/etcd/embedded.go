package etcd

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded is a single-member etcd running inside this process, for tools
// that bring a whole cluster up on one machine (banyand bench --cluster).
// Production clusters use a real etcd.
type Embedded struct {
	etcd *embed.Etcd
}

// StartEmbedded starts an etcd with its data in dir, serving clients and
// its peer port on 127.0.0.1 ports the kernel picks, and returns once it
// has elected itself.
func StartEmbedded(dir string) (*Embedded, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Short ticks make the single member elect itself in ~0.1 s.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cu := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	pu := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after 30s")
	}
	return &Embedded{etcd: e}, nil
}

// Endpoint is the client address, host:port.
func (e *Embedded) Endpoint() string { return e.etcd.Clients[0].Addr().String() }

// Close stops the server. Close its clients first, or it waits for them.
func (e *Embedded) Close() { e.etcd.Close() }
