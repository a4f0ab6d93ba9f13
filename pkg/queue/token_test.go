package queue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/banyand-io/banyand/pkg/queue"
)

type state struct{ err error }

type other struct{}

// waiter answers with the state its future's token holds.
type waiter struct{}

func (waiter) Wait(_ context.Context, tok queue.Token) error {
	if s := queue.TokenValue[state](tok); s != nil {
		return s.err
	}
	return errors.New("no state in the token")
}

// A Token gives back the pointer it was made with, to the type it was
// made with only; one Waiter so tells its futures apart.
func TestTokenCarriesItsPointer(t *testing.T) {
	a, b := &state{}, &state{err: queue.ErrDeadline}
	if got := queue.TokenValue[state](queue.MakeToken(a)); got != a {
		t.Fatalf("TokenValue = %p, want %p", got, a)
	}
	if got := queue.TokenValue[state](queue.Token{}); got != nil {
		t.Fatalf("zero Token holds %p", got)
	}
	if got := queue.TokenValue[state](queue.MakeToken(&other{})); got != nil {
		t.Fatalf("a token of another type read as %p", got)
	}
	ctx := context.Background()
	fa, fb := queue.NewFuture(waiter{}, queue.MakeToken(a)), queue.NewFuture(waiter{}, queue.MakeToken(b))
	if err := fa.Get(ctx); err != nil {
		t.Fatalf("first future: %v", err)
	}
	if err := fb.Get(ctx); !errors.Is(err, queue.ErrDeadline) {
		t.Fatalf("second future: %v, want its own state's ErrDeadline", err)
	}
	if err := (queue.Future{}).Get(ctx); err == nil {
		t.Fatal("the zero Future answered nil")
	}
}

// Publish allocates nothing for a future.
func TestNewFutureAllocatesNothing(t *testing.T) {
	s := &state{}
	var f queue.Future
	if n := testing.AllocsPerRun(100, func() { f = queue.NewFuture(waiter{}, queue.MakeToken(s)) }); n != 0 {
		t.Fatalf("NewFuture allocates %v times", n)
	}
	_ = f
}
