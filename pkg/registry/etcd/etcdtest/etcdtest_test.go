package etcdtest

import (
	"context"
	"testing"
	"time"
)

func TestRestartKeepsData(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := s.Client()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	// The client reconnects to the same endpoint by itself.
	resp, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart got %v, want k=v", resp.Kvs)
	}
}
