package gateway

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// reference holds BanyanDB v0.10.3's message descriptors, built from the
// wire facts in api/testdata (taken from upstream's protos), not from
// banyand's: the JSON its gateway writes for a message is protojson's
// rendering of these with the gateway's default options.
type reference struct{ files *protoregistry.Files }

// bdbJSON is BanyanDB's gateway's JSON for m: m's wire bytes read as the
// upstream message of the same name and written with grpc-gateway's
// default marshaler options.
func (r *reference) bdbJSON(t *testing.T, m proto.Message) []byte {
	t.Helper()
	name := m.ProtoReflect().Descriptor().FullName()
	d, err := r.files.FindDescriptorByName(name)
	if err != nil {
		t.Fatalf("BanyanDB has no message %s: %v", name, err)
	}
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	up := dynamicpb.NewMessage(d.(protoreflect.MessageDescriptor))
	if err := proto.Unmarshal(raw, up); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(up.GetUnknown()) > 0 {
		t.Fatalf("%s: BanyanDB does not know some of banyand's fields (%d bytes)", name, len(up.GetUnknown()))
	}
	out, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(up)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadReference reads the wire facts: one file per upstream package.
func loadReference(t *testing.T) *reference {
	t.Helper()
	f, err := os.Open("../../api/testdata/banyandb-v0.10.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := &refBuilder{files: map[string]*descriptorpb.FileDescriptorProto{}, msgs: map[string]*descriptorpb.DescriptorProto{}, enums: map[string]*descriptorpb.EnumDescriptorProto{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		switch {
		case len(cols) == 4 && cols[3] == "enum":
			n, _ := strconv.Atoi(cols[2])
			e := b.enum(cols[0])
			e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(cols[1]), Number: proto.Int32(int32(n))})
		case len(cols) == 7:
			b.field(t, cols)
		case len(cols) == 6:
			// A method: its messages exist upstream even when they have
			// no fields (and so no field facts).
			b.message(cols[2])
			b.message(cols[3])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto),
		protodesc.ToFileDescriptorProto(structpb.File_google_protobuf_struct_proto),
	}}
	names := make([]string, 0, len(b.files))
	for n := range b.files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		set.File = append(set.File, b.files[n])
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatalf("BanyanDB's descriptors from the wire facts: %v", err)
	}
	return &reference{files: files}
}

type refBuilder struct {
	files map[string]*descriptorpb.FileDescriptorProto // by package
	msgs  map[string]*descriptorpb.DescriptorProto
	enums map[string]*descriptorpb.EnumDescriptorProto
}

// split cuts a full name into its package (banyandb.<x>.v1) and the
// nested path inside it.
func split(full string) (pkg string, path []string) {
	parts := strings.Split(full, ".")
	return strings.Join(parts[:3], "."), parts[3:]
}

func (b *refBuilder) file(pkg string) *descriptorpb.FileDescriptorProto {
	f, ok := b.files[pkg]
	if !ok {
		f = &descriptorpb.FileDescriptorProto{
			Name: proto.String("reference/" + strings.ReplaceAll(pkg, ".", "/") + ".proto"), Package: proto.String(pkg), Syntax: proto.String("proto3"),
		}
		b.files[pkg] = f
	}
	return f
}

// message finds or makes the message full, and its parents.
func (b *refBuilder) message(full string) *descriptorpb.DescriptorProto {
	if m, ok := b.msgs[full]; ok {
		return m
	}
	f, parent, name := b.parent(full)
	m := &descriptorpb.DescriptorProto{Name: proto.String(name)}
	if parent != nil {
		parent.NestedType = append(parent.NestedType, m)
	} else {
		f.MessageType = append(f.MessageType, m)
	}
	b.msgs[full] = m
	return m
}

func (b *refBuilder) enum(full string) *descriptorpb.EnumDescriptorProto {
	if e, ok := b.enums[full]; ok {
		return e
	}
	f, parent, name := b.parent(full)
	e := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
	if parent != nil {
		parent.EnumType = append(parent.EnumType, e)
	} else {
		f.EnumType = append(f.EnumType, e)
	}
	b.enums[full] = e
	return e
}

// parent is where the type full is declared: its file when it is
// top-level, else the message that nests it; and its short name.
func (b *refBuilder) parent(full string) (*descriptorpb.FileDescriptorProto, *descriptorpb.DescriptorProto, string) {
	pkg, path := split(full)
	if len(path) == 1 {
		return b.file(pkg), nil, path[0]
	}
	return nil, b.message(full[:strings.LastIndex(full, ".")]), path[len(path)-1]
}

var scalarTypes = map[string]descriptorpb.FieldDescriptorProto_Type{
	"double": descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, "float": descriptorpb.FieldDescriptorProto_TYPE_FLOAT,
	"int64": descriptorpb.FieldDescriptorProto_TYPE_INT64, "uint64": descriptorpb.FieldDescriptorProto_TYPE_UINT64,
	"int32": descriptorpb.FieldDescriptorProto_TYPE_INT32, "uint32": descriptorpb.FieldDescriptorProto_TYPE_UINT32,
	"bool": descriptorpb.FieldDescriptorProto_TYPE_BOOL, "string": descriptorpb.FieldDescriptorProto_TYPE_STRING,
	"bytes": descriptorpb.FieldDescriptorProto_TYPE_BYTES, "sint64": descriptorpb.FieldDescriptorProto_TYPE_SINT64,
	"sint32": descriptorpb.FieldDescriptorProto_TYPE_SINT32, "fixed64": descriptorpb.FieldDescriptorProto_TYPE_FIXED64,
	"fixed32": descriptorpb.FieldDescriptorProto_TYPE_FIXED32,
	"message": descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, "enum": descriptorpb.FieldDescriptorProto_TYPE_ENUM,
}

// field adds one field fact: message, field, number, type, label,
// type_name, oneof.
func (b *refBuilder) field(t *testing.T, cols []string) {
	t.Helper()
	msgName, name, typ, label, typeName, oneof := cols[0], cols[1], cols[3], cols[4], cols[5], cols[6]
	n, err := strconv.Atoi(cols[2])
	if err != nil {
		t.Fatalf("wire facts: %q: %v", cols, err)
	}
	m := b.message(msgName)
	fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(int32(n)), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	pkg, _ := split(msgName)
	depend := func(typeName string) {
		dep := "google/protobuf/timestamp.proto"
		switch {
		case strings.HasPrefix(typeName, "google.protobuf.NullValue"):
			dep = "google/protobuf/struct.proto"
		case !strings.HasPrefix(typeName, "google.protobuf."):
			dp, _ := split(typeName)
			if dp == pkg {
				return
			}
			dep = *b.file(dp).Name
		}
		f := b.file(pkg)
		if !slices.Contains(f.Dependency, dep) {
			f.Dependency = append(f.Dependency, dep)
		}
	}
	switch label {
	case "map":
		// map<K,V>: a repeated nested entry message.
		kv := strings.Split(strings.TrimSuffix(strings.TrimPrefix(typ, "map<"), ">"), ",")
		entry := &descriptorpb.DescriptorProto{
			Name:    proto.String(strings.ToUpper(name[:1]) + name[1:] + "Entry"),
			Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("key"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: scalarTypes[kv[0]].Enum()},
				{Name: proto.String("value"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: scalarTypes[kv[1]].Enum()},
			},
		}
		m.NestedType = append(m.NestedType, entry)
		fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		fd.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
		fd.TypeName = proto.String("." + msgName + "." + entry.GetName())
	default:
		st, ok := scalarTypes[typ]
		if !ok {
			t.Fatalf("wire facts: unknown type %q in %q", typ, cols)
		}
		fd.Type = st.Enum()
		if label == "repeated" {
			fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		}
		if typeName != "" {
			fd.TypeName = proto.String("." + typeName)
			depend(typeName)
		}
	}
	if oneof != "" {
		idx := slices.IndexFunc(m.OneofDecl, func(o *descriptorpb.OneofDescriptorProto) bool { return o.GetName() == oneof })
		if idx < 0 {
			m.OneofDecl = append(m.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String(oneof)})
			idx = len(m.OneofDecl) - 1
		}
		fd.OneofIndex = proto.Int32(int32(idx))
		if oneof == "_"+name {
			fd.Proto3Optional = proto.Bool(true)
		}
	}
	m.Field = append(m.Field, fd)
}

// String helps failures name a message.
func (r *reference) String() string { return fmt.Sprintf("%d files", r.files.NumFiles()) }
