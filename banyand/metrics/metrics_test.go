package metrics

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

type fakeServerStream struct{ grpc.ServerStream }

func (fakeServerStream) Context() context.Context { return context.Background() }

// Write streams are counted as RPCs but their messages bypass the
// per-message instrumentation; other streams keep it.
func TestStreamMetricsInterceptor(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newGRPCMetrics(reg)
	intercept := streamMetricsInterceptor(m)
	ss := fakeServerStream{}
	for method, wantOriginal := range map[string]bool{
		"/banyandb.stream.v1.StreamService/Write":   true,
		"/banyandb.measure.v1.MeasureService/Write": true,
		"/banyandb.stream.v1.StreamService/Other":   false,
	} {
		var got grpc.ServerStream
		err := intercept(nil, ss, &grpc.StreamServerInfo{FullMethod: method, IsClientStream: true, IsServerStream: true},
			func(_ any, s grpc.ServerStream) error { got = s; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if (got == grpc.ServerStream(ss)) != wantOriginal {
			t.Errorf("%s: handler got the original stream %v, want %v", method, got == grpc.ServerStream(ss), wantOriginal)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	handled := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "banyand_grpc_server_handled_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			var svc, meth string
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case "grpc_service":
					svc = l.GetValue()
				case "grpc_method":
					meth = l.GetValue()
				}
			}
			handled["/"+svc+"/"+meth] = mt.GetCounter().GetValue()
		}
	}
	for _, method := range []string{"/banyandb.stream.v1.StreamService/Write", "/banyandb.measure.v1.MeasureService/Write", "/banyandb.stream.v1.StreamService/Other"} {
		if handled[method] != 1 {
			t.Errorf("%s: handled %v, want 1 (all handled: %v)", method, handled[method], handled)
		}
	}
}
