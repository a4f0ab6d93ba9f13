// Package status renders a role's status page: the nodes it knows with
// their health, each group's shard placement, and the client write rates.
package status

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/route"
)

// Interval is how often the status page samples the write counters;
// its rates are averages over the last interval. The page refreshes itself
// at the same pace.
const Interval = 5 * time.Second

//go:embed status.html
var statusHTML string

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"cssClass": func(s string) string { return strings.ReplaceAll(s, " ", "-") },
}).Parse(statusHTML))

// Sources are what the status page reads. Any but self and writes
// may be nil; their sections are then left out (standalone).
type Sources struct {
	Self     func() Node
	Nodes    func() []*databasev1.Node // every registered node
	PubStats func() pub.Stats          // the publisher's view of the data nodes
	Table    func() *route.Table       // current placement
	Writes   prometheus.Gatherer       // the role's registry, for the write counters
	// Hinted lists, group → node → shards, the data nodes keeping hints:
	// writes acknowledged with fewer copies than their group's replicas,
	// whose missing copies are still to be made.
	Hinted func() map[string]map[string][]uint32
}

// Node is one row of the node table.
type Node struct {
	Name, Roles, GRPCAddr, HTTPAddr string
	Health                          string // ready, starting, connected, down, not connected, leaving
	Self                            bool
	InFlightBatches, BytesInUse     int64
}

// Page renders the role's state as server-side HTML (no JavaScript)
// that refreshes itself every Interval. It is also a run component:
// Serve samples the write counters every Interval and swaps in the
// rates the page shows, so a request never waits on a computation.
type Page struct {
	src   Sources
	rates atomic.Pointer[writeRates] // nil until two samples were taken
	last  *writeSample               // owned by Serve (tests call sample directly)
}

// New is the status page of src; Serve samples it.
func New(src Sources) *Page { return &Page{src: src} }

// Name implements run.Component.
func (p *Page) Name() string { return "status-page" }

// Serve samples the write counters every Interval until ctx ends.
func (p *Page) Serve(ctx context.Context) error {
	t := time.NewTicker(Interval)
	defer t.Stop()
	p.sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			p.sample(now)
		}
	}
}

// writeKey identifies one series of the write counters.
type writeKey struct{ Group, Kind, Status string }

type writeSample struct {
	at       time.Time
	received map[writeKey]float64 // Status empty
	answered map[writeKey]float64
}

// writeRates are per-second averages between two samples.
type writeRates struct {
	over               time.Duration
	received, answered map[writeKey]float64
}

// sample reads the write counters at now and, from the previous sample,
// computes the rates the page shows.
func (p *Page) sample(now time.Time) {
	cur := p.readWrites()
	cur.at = now
	if prev := p.last; prev != nil && now.After(prev.at) {
		dt := now.Sub(prev.at)
		r := &writeRates{over: dt, received: map[writeKey]float64{}, answered: map[writeKey]float64{}}
		perSec := func(out, cur, prev map[writeKey]float64) {
			for k, v := range cur {
				// A counter never decreases; a smaller value is a reset.
				out[k] = max(v-prev[k], 0) / dt.Seconds()
			}
		}
		perSec(r.received, cur.received, prev.received)
		perSec(r.answered, cur.answered, prev.answered)
		p.rates.Store(r)
	}
	p.last = &cur
}

// readWrites gathers the liaison write counters from the registry.
func (p *Page) readWrites() writeSample {
	s := writeSample{received: map[writeKey]float64{}, answered: map[writeKey]float64{}}
	if p.src.Writes == nil {
		return s
	}
	mfs, err := p.src.Writes.Gather()
	if err != nil && len(mfs) == 0 {
		return s
	}
	for _, mf := range mfs {
		var into map[writeKey]float64
		switch mf.GetName() {
		case "banyand_liaison_writes_received_total":
			into = s.received
		case "banyand_liaison_writes_answered_total":
			into = s.answered
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			var k writeKey
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "group":
					k.Group = l.GetValue()
				case "kind":
					k.Kind = l.GetValue()
				case "status":
					k.Status = l.GetValue()
				}
			}
			into[k] += m.GetCounter().GetValue()
		}
	}
	return s
}

// statusView is what the template renders.
type statusView struct {
	Self       Node
	Generated  string
	Refresh    int
	Nodes      []Node
	ShowNodes  bool
	Groups     []statusGroup
	ShowGroups bool
	// UnderReplicated counts the copies the publisher could not make.
	UnderReplicated int64
	Writes          []statusWrite
	Answers         []statusWrite
	RateInterval    string // empty until rates are known
}

type statusGroup struct {
	Name               string
	ShardNum, Replicas uint32
	Shards             []statusShard
	Err                string
	Hinted             []string // "node: shards …", nodes keeping hints of the group
}

type statusShard struct {
	ID    uint32
	Nodes []string // primary first
}

type statusWrite struct {
	Group, Kind, Status string
	PerSecond           string // "" while unknown
	Total               float64
	Error               bool
}

// ServeHTTP renders the page.
func (p *Page) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	var buf bytes.Buffer
	if err := statusTemplate.Execute(&buf, p.view(time.Now())); err != nil {
		http.Error(w, "rendering the status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func (p *Page) view(now time.Time) statusView {
	v := statusView{
		Self:      p.src.Self(),
		Generated: now.UTC().Format(time.RFC3339),
		Refresh:   int(Interval / time.Second),
	}
	if p.src.Nodes != nil {
		v.ShowNodes = true
		v.Nodes = p.nodeRows()
	}
	if p.src.Table != nil {
		v.ShowGroups = true
		v.Groups = groupRows(p.src.Table())
		if p.src.Hinted != nil {
			addHinted(v.Groups, p.src.Hinted())
		}
	}
	if p.src.PubStats != nil {
		v.UnderReplicated = p.src.PubStats().UnderReplicated
	}
	v.Writes, v.Answers, v.RateInterval = p.writeRows()
	return v
}

// nodeRows merges the registry's nodes with the publisher's view of them.
func (p *Page) nodeRows() []Node {
	var st pub.Stats
	if p.src.PubStats != nil {
		st = p.src.PubStats()
	}
	seen := map[string]pub.NodeStats{}
	for _, n := range st.Nodes {
		seen[n.Name] = n
	}
	var rows []Node
	listed := map[string]bool{}
	self := p.src.Self().Name
	for _, n := range p.src.Nodes() {
		name := n.GetMetadata().GetName()
		listed[name] = true
		if name == self {
			continue // the page's first row, with its own health
		}
		row := Node{Name: name, Roles: roleNames(n.GetRoles()), GRPCAddr: n.GetGrpcAddress(), HTTPAddr: n.GetHttpAddress()}
		if ps, ok := seen[name]; ok {
			row.Health, row.InFlightBatches, row.BytesInUse = connHealth(ps), ps.InFlightBatches, ps.BytesInUse
		} else if slices.Contains(n.GetRoles(), databasev1.Role_ROLE_DATA) {
			row.Health = "not connected"
		}
		rows = append(rows, row)
	}
	// Nodes that left the registry but are still being drained.
	for _, ps := range st.Nodes {
		if !listed[ps.Name] {
			rows = append(rows, Node{Name: ps.Name, Roles: "data", GRPCAddr: ps.Addr, Health: "leaving",
				InFlightBatches: ps.InFlightBatches, BytesInUse: ps.BytesInUse})
		}
	}
	slices.SortFunc(rows, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return rows
}

func connHealth(n pub.NodeStats) string {
	if n.Down {
		return "down"
	}
	return "connected"
}

func roleNames(roles []databasev1.Role) string {
	names := make([]string, 0, len(roles))
	for _, r := range roles {
		names = append(names, strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_")))
	}
	return strings.Join(names, ", ")
}

func groupRows(t *route.Table) []statusGroup {
	if t == nil {
		return nil
	}
	var out []statusGroup
	for _, g := range t.Groups() {
		sg := statusGroup{Name: g.Name, ShardNum: g.ShardNum, Replicas: g.Replicas}
		for s := range g.ShardNum {
			nodes, err := t.Nodes(g.Name, s)
			if err != nil {
				sg.Err = err.Error()
				sg.Shards = nil
				break
			}
			sh := statusShard{ID: s}
			for _, n := range nodes {
				sh.Nodes = append(sh.Nodes, n.Name)
			}
			sg.Shards = append(sg.Shards, sh)
		}
		out = append(out, sg)
	}
	return out
}

// addHinted lists, under each group, the nodes keeping hints of it.
func addHinted(groups []statusGroup, hinted map[string]map[string][]uint32) {
	for i := range groups {
		byNode := hinted[groups[i].Name]
		for _, node := range slices.Sorted(maps.Keys(byNode)) {
			groups[i].Hinted = append(groups[i].Hinted, fmt.Sprintf("%s: shards %v", node, byNode[node]))
		}
	}
}

// writeRows are the totals as of now and the rates of the last interval.
func (p *Page) writeRows() (writes, answers []statusWrite, over string) {
	cur := p.readWrites()
	rates := p.rates.Load()
	rate := func(m func(*writeRates) map[writeKey]float64, k writeKey) string {
		if rates == nil {
			return ""
		}
		return formatRate(m(rates)[k])
	}
	if rates != nil {
		over = rates.over.Round(time.Second).String()
	}
	for k, v := range cur.received {
		writes = append(writes, statusWrite{Group: k.Group, Kind: k.Kind, Total: v,
			PerSecond: rate(func(r *writeRates) map[writeKey]float64 { return r.received }, k)})
	}
	for k, v := range cur.answered {
		answers = append(answers, statusWrite{Group: k.Group, Kind: k.Kind, Status: k.Status, Total: v,
			Error:     k.Status != "STATUS_SUCCEED",
			PerSecond: rate(func(r *writeRates) map[writeKey]float64 { return r.answered }, k)})
	}
	byKey := func(a, b statusWrite) int {
		return strings.Compare(a.Group+"\x00"+a.Kind+"\x00"+a.Status, b.Group+"\x00"+b.Kind+"\x00"+b.Status)
	}
	slices.SortFunc(writes, byKey)
	slices.SortFunc(answers, byKey)
	return writes, answers, over
}

func formatRate(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
