package bus

import (
	"context"
	"fmt"
	"testing"
)

func BenchmarkPublish(b *testing.B) {
	nop := ListenerFunc(func(context.Context, Message) (any, error) { return nil, nil })
	for _, listeners := range []int{1, 4} {
		bus := New()
		for range listeners {
			if err := bus.Subscribe("t", nop); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		m := Message{ID: 1, Payload: "x"}
		b.Run(fmt.Sprintf("listeners=%d", listeners), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bus.Publish(ctx, "t", m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("listeners=%d/parallel", listeners), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := bus.Publish(ctx, "t", m); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		bus.Close()
	}
}

func BenchmarkPublishFuture(b *testing.B) {
	bus := New()
	defer bus.Close()
	echo := ListenerFunc(func(_ context.Context, m Message) (any, error) { return m.Payload, nil })
	if err := bus.Subscribe("req", echo); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		f, err := bus.PublishFuture(ctx, "req", Message{ID: 1})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Get(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
