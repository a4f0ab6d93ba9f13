package bus

import (
	"context"
	"errors"
	"testing"
)

func TestPublishFuture(t *testing.T) {
	double := ListenerFunc(func(_ context.Context, m Message) (any, error) {
		return m.Payload.(int) * 2, nil
	})
	tests := []struct {
		name       string
		listeners  []Listener
		cancelled  bool
		closed     bool
		wantPubErr error
		wantReply  any
		wantGetErr []error
	}{
		{name: "reply of the single listener", listeners: []Listener{double}, wantReply: 42},
		{name: "listener error", listeners: []Listener{&rec{err: errBoom}}, wantGetErr: []error{errBoom}},
		{name: "listener panic", listeners: []Listener{&rec{panicV: 1}}, wantGetErr: []error{ErrListenerPanic}},
		{name: "no subscriber", wantPubErr: ErrNoSubscriber},
		{name: "two listeners", listeners: []Listener{double, double}, wantPubErr: ErrMultipleListeners},
		{name: "closed bus", listeners: []Listener{double}, closed: true, wantPubErr: ErrClosed},
		{name: "cancelled context", listeners: []Listener{double}, cancelled: true, wantPubErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			defer b.Close()
			for _, l := range tt.listeners {
				if err := b.Subscribe("req", l); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			if tt.closed {
				b.Close()
			}
			f, err := b.PublishFuture(ctx, "req", Message{ID: 9, Payload: 21})
			if tt.wantPubErr != nil {
				checkErr(t, err, []error{tt.wantPubErr}, []string{`"req"`})
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reply, err := f.Get(context.Background())
			checkErr(t, err, tt.wantGetErr, nil)
			if reply != tt.wantReply {
				t.Errorf("reply = %v, want %v", reply, tt.wantReply)
			}
		})
	}
}

func TestFutureGetGivesUpWithoutCancellingTheRequest(t *testing.T) {
	b := New()
	release := make(chan struct{})
	if err := b.Subscribe("req", ListenerFunc(func(context.Context, Message) (any, error) {
		<-release
		return "late", nil
	})); err != nil {
		t.Fatal(err)
	}
	f, err := b.PublishFuture(context.Background(), "req", Message{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Get(waitCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with cancelled ctx = %v, want context.Canceled", err)
	}
	close(release)
	if reply, err := f.Get(context.Background()); err != nil || reply != "late" {
		t.Fatalf("Get = %v, %v; want late, nil", reply, err)
	}
	b.Close()
}
