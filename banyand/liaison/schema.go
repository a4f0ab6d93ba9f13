package liaison

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/tagindex"
	"github.com/banyand-io/banyand/pkg/textmatch"
)

type nameKey = schema.Key

// schemaSnapshot is the write and query paths' view of one schema
// snapshot: each stream's and measure's layout. It is immutable.
type schemaSnapshot struct {
	src      *schema.Snapshot
	streams  map[nameKey]*streamLayout
	measures map[nameKey]*measureLayout
	traces   map[nameKey]*traceLayout
}

// layouts derives the liaison's view from the schema cache, once per
// snapshot: the first lookup after a schema change builds it (two racing
// lookups may both build; either result is the same), the others read it
// without locks.
type layouts struct {
	logger *slog.Logger
	src    *schema.Cache
	cur    atomic.Pointer[schemaSnapshot]
}

func newLayouts(logger *slog.Logger, src *schema.Cache) *layouts {
	return &layouts{logger: logger, src: src}
}

func (l *layouts) snapshot() *schemaSnapshot {
	src := l.src.Current()
	if s := l.cur.Load(); s != nil && s.src == src {
		return s
	}
	s := &schemaSnapshot{src: src, streams: map[nameKey]*streamLayout{}, measures: map[nameKey]*measureLayout{}, traces: map[nameKey]*traceLayout{}}
	for k, m := range src.Streams {
		if sl, err := newStreamLayout(src.Groups[k.Group], m); err == nil {
			sl.indexSpec = indexSpec(src, sl.layout, commonv1.Catalog_CATALOG_STREAM)
			s.streams[k] = sl
		} else {
			l.logger.Warn("stream unusable for writes; skipped", "group", k.Group, "name", k.Name, "error", err)
		}
	}
	for k, m := range src.Measures {
		if ml, err := newMeasureLayout(src.Groups[k.Group], m); err == nil {
			ml.indexSpec = indexSpec(src, ml.layout, commonv1.Catalog_CATALOG_MEASURE)
			s.measures[k] = ml
		} else {
			l.logger.Warn("measure unusable for writes; skipped", "group", k.Group, "name", k.Name, "error", err)
		}
	}
	for k, t := range src.Traces {
		if tl, err := newTraceLayout(src.Groups[k.Group], t); err == nil {
			tl.indexSpec = indexSpec(src, tl.layout, commonv1.Catalog_CATALOG_TRACE)
			s.traces[k] = tl
		} else {
			l.logger.Warn("trace unusable for writes; skipped", "group", k.Group, "name", k.Name, "error", err)
		}
	}
	l.cur.Store(s)
	return s
}

// Placement keeps the router's table in step with the live data nodes and
// the groups. Both watchers call into it; updates are serialised here, the
// hot path reads the router's snapshot without locks.
type Placement struct {
	logger *slog.Logger
	router *route.Router

	mu     sync.Mutex
	nodes  []route.Node
	groups []route.Group
}

// NewPlacement returns a placement updater for router.
func NewPlacement(logger *slog.Logger, router *route.Router) *Placement {
	return &Placement{logger: logger, router: router}
}

// SetGroups is the schema side's callback (schema.NewCache's onGroups).
func (p *Placement) SetGroups(groups []route.Group) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups = groups
	p.update()
}

// SetNodes is the node watcher's side.
func (p *Placement) SetNodes(nodes []route.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes = nodes
	p.update()
}

func (p *Placement) update() {
	t, err := p.router.Update(p.nodes, p.groups)
	if err != nil {
		p.logger.Error("placement not updated; keeping the previous table", "error", err)
		return
	}
	p.logger.Debug("placement updated", "version", t.Version(), "nodes", len(p.nodes), "groups", len(p.groups))
}

// boundRules returns the index rules of group bound to the subject (name,
// catalog) by a binding of the group, by name.
func boundRules(src *schema.Snapshot, group, subject string, catalog commonv1.Catalog) map[string]*databasev1.IndexRule {
	out := map[string]*databasev1.IndexRule{}
	for k, b := range src.IndexRuleBindings {
		if k.Group != group || b.GetSubject().GetName() != subject || b.GetSubject().GetCatalog() != catalog {
			continue
		}
		for _, name := range b.GetRules() {
			if r := src.IndexRules[schema.Key{Group: group, Name: name}]; r != nil {
				out[name] = r
			}
		}
	}
	return out
}

// indexSpec encodes the index rules bound to l's subject as the data
// nodes index them (pkg/tagindex): each rule's tags, by position, with the
// rule's analyzer; an int tag of a rule that sorts also in order. A tag
// the schema lacks is left out.
func indexSpec(src *schema.Snapshot, l *layout, catalog commonv1.Catalog) []byte {
	var spec tagindex.Spec
	for _, r := range boundRules(src, l.group, l.name, catalog) {
		for _, tag := range r.GetTags() {
			if ref, ok := l.byName[tag]; ok {
				spec = append(spec, tagindex.Entry{
					Family: ref.family, Tag: ref.tag, Name: tag, Analyzer: r.GetAnalyzer(),
					Sorted: r.GetAnalyzer() == "" && !r.GetNoSort() && ref.typ == databasev1.TagType_TAG_TYPE_INT,
				})
			}
		}
	}
	return spec.Normalize().Append(nil)
}

// orderTag resolves the index rule a query orders by: the rule named in
// group, bound to the subject (name, catalog) by a binding of the group,
// and not marked no_sort; its first tag is the one to order by. Anything
// else is InvalidArgument, as in BanyanDB.
func (l *layouts) orderTag(group, subject string, catalog commonv1.Catalog, rule string) (string, error) {
	src := l.src.Current()
	if src.IndexRules[schema.Key{Group: group, Name: rule}] == nil {
		return "", status.Errorf(codes.InvalidArgument, "order_by: group %q has no index rule %q", group, rule)
	}
	r := boundRules(src, group, subject, catalog)[rule]
	switch {
	case r == nil:
		return "", status.Errorf(codes.InvalidArgument, "order_by: index rule %s/%s is not bound to %s", group, rule, subject)
	case r.GetNoSort() || len(r.GetTags()) == 0:
		return "", status.Errorf(codes.InvalidArgument, "order_by: index rule %s/%s does not sort (no_sort or no tag)", group, rule)
	}
	return r.GetTags()[0], nil
}

// withAnalyzers fills in the analyzer of every MATCH condition of c (a
// copy the caller owns) that names none: the analyzer of the index rule
// bound to the subject that covers the condition's tag. A MATCH whose tag
// no such rule analyzes, or naming an unknown analyzer, is
// InvalidArgument: without one BanyanDB has no tokens to match.
func (l *layouts) withAnalyzers(group, subject string, catalog commonv1.Catalog, c *modelv1.Criteria) error {
	var rules map[string]*databasev1.IndexRule
	var walk func(c *modelv1.Criteria) error
	walk = func(c *modelv1.Criteria) error {
		switch e := c.GetExp().(type) {
		case *modelv1.Criteria_Le:
			if err := walk(e.Le.GetLeft()); err != nil {
				return err
			}
			return walk(e.Le.GetRight())
		case *modelv1.Criteria_Condition:
			cond := e.Condition
			if cond.GetOp() != modelv1.Condition_BINARY_OP_MATCH {
				return nil
			}
			if a := cond.GetMatchOption().GetAnalyzer(); a != "" {
				if !textmatch.Known(a) {
					return status.Errorf(codes.InvalidArgument, "criteria: MATCH on %q with analyzer %q: not one of keyword, standard, simple, url", cond.GetName(), a)
				}
				return nil
			}
			if rules == nil {
				rules = boundRules(l.src.Current(), group, subject, catalog)
			}
			for _, r := range rules {
				if r.GetAnalyzer() != "" && slices.Contains(r.GetTags(), cond.GetName()) {
					if cond.MatchOption == nil {
						cond.MatchOption = &modelv1.Condition_MatchOption{}
					}
					cond.MatchOption.Analyzer = r.GetAnalyzer()
					return nil
				}
			}
			return status.Errorf(codes.InvalidArgument, "criteria: MATCH on %q: no index rule with an analyzer covers the tag in %s/%s", cond.GetName(), group, subject)
		}
		return nil
	}
	return walk(c)
}
