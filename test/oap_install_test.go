package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// oapExpireAt is BanyanDBClient.DEFAULT_EXPIRE_AT, the expire_at it gives
// an index rule binding created without one.
var oapExpireAt = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

// oapBoot is one OAP start's schema install (BanyanDBIndexInstaller's
// isExists, then createTable for what is missing) and its TopN cleanup
// (BanyanDBStorageProvider.notifyAfterCompleted). It records what it
// changed: a second boot over an installed schema changes nothing.
type oapBoot struct {
	t       *testing.T
	ctx     context.Context
	r       *oapRegistries
	aligned map[string]bool                             // groups checked this boot
	rules   map[string]map[string]*databasev1.IndexRule // group → rules handled this boot
	// created and updated name what this boot created or updated, as
	// "kind group/name"; updated also says how the server's copy differed.
	created, updated []string
	// bindings are the bindings this boot created, with the begin_at and
	// expire_at the client filled in.
	bindings []*databasev1.IndexRuleBinding
}

func newOAPBoot(t *testing.T, r *oapRegistries) *oapBoot {
	return &oapBoot{t: t, ctx: ctxT(t), r: r, aligned: map[string]bool{}, rules: map[string]map[string]*databasev1.IndexRule{}}
}

func objName(md *commonv1.Metadata) string {
	if md.GetGroup() == "" {
		return md.GetName()
	}
	return md.GetGroup() + "/" + md.GetName()
}

// fail stops the boot as OAP would: any status it does not tolerate ends
// the install with a StorageException.
func (b *oapBoot) fail(call string, req proto.Message, err error) {
	b.t.Helper()
	st := status.Convert(err)
	b.t.Fatalf("OAP cannot boot: %s failed with %s %q; request: %s", call, st.Code(), st.Message(), prototext.Format(req))
}

// define creates o; ALREADY_EXISTS ("already created by another OAP node")
// is logged, not an error. It says whether o was created.
func define[T schemaObject](b *oapBoot, r registry[T], o T) bool {
	b.t.Helper()
	err := r.create(b.ctx, o)
	switch status.Code(err) {
	case codes.OK:
		b.created = append(b.created, r.kind+" "+objName(o.GetMetadata()))
		return true
	case codes.AlreadyExists:
		return false
	}
	b.fail(r.kind+" Create", o, err)
	return false
}

// find is BanyanDBClient's find*: NOT_FOUND is "none".
func find[T schemaObject](b *oapBoot, r registry[T], md *commonv1.Metadata) (T, bool) {
	b.t.Helper()
	o, err := r.get(b.ctx, md)
	if status.Code(err) == codes.NotFound {
		var zero T
		return zero, false
	}
	if err != nil {
		b.fail(r.kind+" Get", md, err)
	}
	return o, true
}

// cleared is m without the named fields.
func cleared[T proto.Message](m T, fields ...protoreflect.Name) T {
	c := proto.CloneOf(m)
	r := c.ProtoReflect()
	for _, f := range fields {
		if fd := r.Descriptor().Fields().ByName(f); fd != nil {
			r.Clear(fd)
		}
	}
	return c
}

// compareOrUpdate is the check* step: the server's copy without
// updated_at and metadata (and what ignore names) must equal what OAP
// builds without metadata, or OAP updates it, on every boot.
func compareOrUpdate[T schemaObject](b *oapBoot, r registry[T], had, want T, ignore ...protoreflect.Name) {
	b.t.Helper()
	got := cleared(had, append([]protoreflect.Name{"updated_at", "metadata"}, ignore...)...)
	if proto.Equal(got, cleared(want, "updated_at", "metadata")) {
		return
	}
	b.updated = append(b.updated, fmt.Sprintf("%s %s: server has {%s}, OAP builds {%s}",
		r.kind, objName(want.GetMetadata()), prototext.Format(got), prototext.Format(cleared(want, "metadata"))))
	if err := r.update(b.ctx, want); err != nil {
		b.fail(r.kind+" Update", want, err)
	}
}

// check finds o and compares it, creating it if it is missing.
func check[T schemaObject](b *oapBoot, r registry[T], o T, ignore ...protoreflect.Name) {
	b.t.Helper()
	had, ok := find(b, r, o.GetMetadata())
	if !ok {
		define(b, r, o)
		return
	}
	compareOrUpdate(b, r, had, o, ignore...)
}

// alignGroup creates the group if the Exist answer said it is missing,
// and otherwise compares what checkGroup compares (shard_num, the
// interval counts, the stages) and updates it if they differ.
func (b *oapBoot) alignGroup(name string, hasGroup bool) {
	b.t.Helper()
	if b.aligned[name] {
		return
	}
	b.aligned[name] = true
	want := oapGroup(name)
	if !hasGroup {
		if _, err := b.r.groups.Create(b.ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: want}); err == nil {
			b.created = append(b.created, "group "+name)
		} else if status.Code(err) != codes.AlreadyExists {
			b.fail("group Create", want, err)
		}
	}
	// define(Group) reads the group back; so does checkGroup.
	resp, err := b.r.groups.Get(b.ctx, &databasev1.GroupRegistryServiceGetRequest{Group: name})
	if err != nil {
		b.fail("group Get", &databasev1.GroupRegistryServiceGetRequest{Group: name}, err)
	}
	if !hasGroup {
		return
	}
	g, w := resp.GetGroup().GetResourceOpts(), want.GetResourceOpts()
	if g.GetShardNum() != w.GetShardNum() || g.GetSegmentInterval().GetNum() != w.GetSegmentInterval().GetNum() ||
		g.GetTtl().GetNum() != w.GetTtl().GetNum() || len(g.GetStages()) != len(w.GetStages()) {
		b.updated = append(b.updated, fmt.Sprintf("group %s: server has {%s}", name, prototext.Format(resp.GetGroup())))
		if _, err := b.r.groups.Update(b.ctx, &databasev1.GroupRegistryServiceUpdateRequest{Group: want}); err != nil {
			b.fail("group Update", want, err)
		}
	}
}

// exist asks r whether md exists and aligns its group.
func exist[T schemaObject](b *oapBoot, r registry[T], md *commonv1.Metadata) bool {
	b.t.Helper()
	hasGroup, has, err := r.exist(b.ctx, md)
	if err != nil {
		b.fail(r.kind+" Exist", md, err)
	}
	b.alignGroup(md.GetGroup(), hasGroup)
	return has
}

// processed is checkIndexRuleProcessed: a rule name is handled once per
// group and boot; a second model declaring it differently stops the boot.
func (b *oapBoot) processed(r *databasev1.IndexRule) bool {
	b.t.Helper()
	g := r.GetMetadata().GetGroup()
	if b.rules[g] == nil {
		b.rules[g] = map[string]*databasev1.IndexRule{}
	}
	if had, ok := b.rules[g][r.GetMetadata().GetName()]; ok {
		if !proto.Equal(had, r) {
			b.t.Fatalf("conflicting index rules %s: %v vs %v", objName(r.GetMetadata()), had, r)
		}
		return true
	}
	b.rules[g][r.GetMetadata().GetName()] = r
	return false
}

// defineRulesAndBinding is createTable's tail: the subject's rules (each
// once per group and boot), then its binding.
func (b *oapBoot) defineRulesAndBinding(rules []*databasev1.IndexRule, binding *databasev1.IndexRuleBinding) {
	b.t.Helper()
	if len(rules) == 0 {
		return
	}
	for _, r := range rules {
		if !b.processed(r) {
			define(b, b.r.rules, r)
		}
	}
	b.defineBinding(binding)
}

// defineBinding creates binding with begin_at = now and expire_at =
// 2099-01-01, as BanyanDBClient.define fills them when unset.
func (b *oapBoot) defineBinding(binding *databasev1.IndexRuleBinding) {
	b.t.Helper()
	withTimes := proto.CloneOf(binding)
	withTimes.BeginAt = timestamppb.Now()
	withTimes.ExpireAt = timestamppb.New(oapExpireAt)
	if define(b, b.r.bindings, withTimes) {
		b.bindings = append(b.bindings, withTimes)
	}
}

// checkRulesAndBinding is checkIndexRules and checkIndexRuleBinding. Like
// OAP's loop it stops at the first rule already handled this boot.
func (b *oapBoot) checkRulesAndBinding(rules []*databasev1.IndexRule, binding *databasev1.IndexRuleBinding) {
	b.t.Helper()
	for _, r := range rules {
		if b.processed(r) {
			break
		}
		check(b, b.r.rules, r)
	}
	if len(rules) == 0 {
		return
	}
	had, ok := find(b, b.r.bindings, binding.GetMetadata())
	if !ok {
		b.defineBinding(binding)
		return
	}
	compareOrUpdate(b, b.r.bindings, had, binding, "begin_at", "expire_at")
}

// installMeasure is isExists/createTable for a measure model with the TopN
// rules configured for it.
func (b *oapBoot) installMeasure(m *oapModel, topN []oapTopN) {
	b.t.Helper()
	ms, rules := m.measure(), m.indexRules()
	if !exist(b, b.r.measures, m.md()) {
		if define(b, b.r.measures, ms) {
			b.defineRulesAndBinding(rules, m.binding(rules))
		}
		for _, n := range m.topNs(topN) {
			define(b, b.r.topNs, n)
		}
		return
	}
	check(b, b.r.measures, ms)
	b.checkRulesAndBinding(rules, m.binding(rules))
	for _, n := range m.topNs(topN) {
		check(b, b.r.topNs, n)
	}
}

func (b *oapBoot) installStream(m *oapModel) {
	b.t.Helper()
	s, rules := m.stream(), m.indexRules()
	if !exist(b, b.r.streams, m.md()) {
		if define(b, b.r.streams, s) {
			b.defineRulesAndBinding(rules, m.binding(rules))
		}
		return
	}
	check(b, b.r.streams, s)
	b.checkRulesAndBinding(rules, m.binding(rules))
}

func (b *oapBoot) installTrace() {
	b.t.Helper()
	tr, rules, binding := oapSegmentTrace()
	if !exist(b, b.r.traces, tr.GetMetadata()) {
		if define(b, b.r.traces, tr) {
			b.defineRulesAndBinding(rules, binding)
		}
		return
	}
	check(b, b.r.traces, tr)
	b.checkRulesAndBinding(rules, binding)
}

func (b *oapBoot) installProperty() {
	b.t.Helper()
	p := oapUITemplate()
	if !exist(b, b.r.props, p.GetMetadata()) {
		define(b, b.r.props, p)
		return
	}
	had, ok := find(b, b.r.props, p.GetMetadata())
	if !ok {
		// findPropertyDefinition does not expect NOT_FOUND here.
		b.t.Fatalf("property %s exists but Get answers NOT_FOUND", objName(p.GetMetadata()))
	}
	compareOrUpdate(b, b.r.props, had, p)
}

// install runs the whole install with topN configured.
func (b *oapBoot) install(topN []oapTopN) {
	b.t.Helper()
	for _, m := range oapMeasures() {
		b.installMeasure(m, topN)
	}
	b.installStream(oapAlarmStream())
	b.installTrace()
	b.installProperty()
}

// cleanupTopN deletes, in every measure group, the TopN aggregations that
// topN does not configure; it returns what it deleted.
func (b *oapBoot) cleanupTopN(topN []oapTopN) []string {
	b.t.Helper()
	configured := map[string]bool{}
	for _, n := range topN {
		configured[n.name] = true
	}
	groups, err := b.r.groups.List(b.ctx, &databasev1.GroupRegistryServiceListRequest{})
	if err != nil {
		b.fail("group List", &databasev1.GroupRegistryServiceListRequest{}, err)
	}
	var deleted []string
	for _, g := range groups.GetGroup() {
		if g.GetCatalog() != commonv1.Catalog_CATALOG_MEASURE {
			continue
		}
		name := g.GetMetadata().GetName()
		aggs, err := b.r.topNList(b.ctx, name)
		if err != nil {
			b.fail("topN aggregation List", &databasev1.TopNAggregationRegistryServiceListRequest{Group: name}, err)
		}
		for _, a := range aggs {
			if configured[a.GetMetadata().GetName()] {
				continue
			}
			md := &commonv1.Metadata{Group: name, Name: a.GetMetadata().GetName()}
			if err := b.r.topNDel(b.ctx, md); err != nil {
				b.fail("topN aggregation Delete", md, err)
			}
			deleted = append(deleted, objName(md))
		}
	}
	return deleted
}
