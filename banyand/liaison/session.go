package liaison

import (
	"context"
	"errors"
	"io"
	"log/slog"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

// pendingWrite is one client message on its way to an answer: either
// already failed (err set) or waiting for the data node's ack (future set).
type pendingWrite struct {
	messageID uint64
	metadata  *commonv1.Metadata
	// metadataRaw is metadata's encoding as received; the response echoes
	// it without encoding it again.
	metadataRaw []byte
	future      queue.Future
	err         *writeError
	// payload is the pooled buffer of the published write: given back
	// once the future succeeded (see payloadPool).
	payload *[]byte
}

// payloadAcked gives the write's buffer back to the pool: its future
// succeeded, so the queue reads it no more.
func (p *pendingWrite) payloadAcked() {
	if p.payload != nil && cap(*p.payload) <= maxPooledPayload {
		payloadPool.Put(p.payload)
	}
	p.payload = nil
}

// maxPendingPerStream bounds how many messages of one client stream may be
// waiting for acks. When it is full the receive loop stops reading, so a
// client that writes faster than acks arrive is slowed by gRPC flow control
// rather than growing the liaison's memory.
const maxPendingPerStream = 8192

// writeSession runs one client Write stream. The receive loop (the RPC's
// goroutine) validates and publishes; the answer loop owns Send and answers
// every message in arrival order once its fate is known. Backpressure: the
// receive loop waits while maxPendingPerStream messages are unanswered
// (see pendingQueue), until the answer loop answers one or the stream's
// context ends.
type writeSession[Req any] struct {
	logger  *slog.Logger
	kind    string // "stream" or "measure", for logs
	recv    func() (Req, error)
	send    func(p pendingWrite, status modelv1.Status) error
	handle  func(ctx context.Context, req Req, pub queue.BatchPublisher) pendingWrite
	publish queue.BatchPublisher
}

func (s *writeSession[Req]) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pending := newPendingQueue(maxPendingPerStream)
	answered := make(chan error, 1)
	go func() { answered <- s.answer(ctx, pending) }()

	var recvErr error
	for {
		req, err := s.recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				recvErr = err
			}
			break
		}
		p := s.handle(ctx, req, s.publish)
		if !pending.push(ctx, p) || ctx.Err() != nil {
			break
		}
	}
	pending.close()
	// The answer loop resolves everything already published before the
	// stream ends, so a client that half-closes still gets every status.
	sendErr := <-answered
	pending.release()
	// Close waits for any ack the answer loop abandoned on a send error.
	_ = s.publish.Close()
	if recvErr != nil {
		return recvErr
	}
	return sendErr
}

func (s *writeSession[Req]) answer(ctx context.Context, pending *pendingQueue) error {
	var sendErr error
	for {
		p, ok := pending.pop()
		if !ok {
			return sendErr
		}
		if sendErr != nil {
			continue // keep draining so the receive loop never blocks
		}
		status := modelv1.Status_STATUS_SUCCEED
		switch {
		case p.err != nil:
			status = p.err.status
			if status != modelv1.Status_STATUS_SUCCEED {
				// The client's mistake, answered with a status: not worth a
				// line per message unless asked for.
				s.logger.Debug("write rejected", s.fields(p, status, "reason", p.err.reason)...)
			}
		case !p.future.IsZero():
			if err := p.future.Get(ctx); err != nil {
				status = statusOf(err)
				// Internal failures are the operator's business; the
				// role's handler rate-limits them per message.
				level := slog.LevelWarn
				if status != modelv1.Status_STATUS_INTERNAL_ERROR || ctx.Err() != nil {
					level = slog.LevelDebug
				}
				s.logger.Log(ctx, level, "write failed", s.fields(p, status, "error", err)...)
			} else {
				p.payloadAcked()
			}
		}
		sendErr = s.send(p, status)
	}
}

// fields are a write's request-scoped log attributes, then extra.
func (s *writeSession[Req]) fields(p pendingWrite, st modelv1.Status, extra ...any) []any {
	return append([]any{
		"kind", s.kind, "group", p.metadata.GetGroup(), "name", p.metadata.GetName(),
		"message_id", p.messageID, "status", st.String(),
	}, extra...)
}

// statusOf maps a publish failure to the status the client sees.
func statusOf(err error) modelv1.Status {
	if errors.Is(err, queue.ErrInvalidMessage) {
		return modelv1.Status_STATUS_INVALID_ARGUMENT
	}
	return modelv1.Status_STATUS_INTERNAL_ERROR
}
