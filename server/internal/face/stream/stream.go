// Package stream holds what every face's streams share: the batch a
// stream's sink gathers its bytes in before a write (Batch), and which
// requests are streams (Paths).
package stream

import (
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// Batch gathers a stream's bytes for one write. Its buffer comes from a
// pool when something is added and goes back at Done, so an idle stream
// holds none. A Batch is used by one goroutine at a time; its zero value is
// empty.
type Batch struct {
	buf *[]byte // nil between batches
}

var pool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooled is the largest buffer put back in the pool: one that held a
// whole batch (hub.MaxBatchBytes) and the room append left, or a stream's
// own message past it.
const maxPooled = 2 * int(hub.MaxBatchBytes)

// Buffer is the batch's buffer, to append to in place; it takes one from
// the pool when the batch holds none.
func (q *Batch) Buffer() *[]byte {
	if q.buf == nil {
		q.buf = pool.Get().(*[]byte)
	}
	return q.buf
}

// Len is how many bytes the batch holds.
func (q *Batch) Len() int {
	if q.buf == nil {
		return 0
	}
	return len(*q.buf)
}

// AppendString adds s to the batch.
func (q *Batch) AppendString(s string) {
	b := q.Buffer()
	*b = append(*b, s...)
}

// Add adds b to the batch, which is bounded by bytes (hub.MaxBatchBytes,
// on every face): what it holds is written with out (not flushed) before b
// would take it past the bound, so a long replay goes out in pieces of up
// to that size, and a b as large as the bound is written with out from
// where it lies (a ring event's cached bytes) without a copy.
func (q *Batch) Add(b []byte, out func([]byte) error) error {
	if q.buf != nil && hub.MaxBatchBytes.Over(int64(len(*q.buf)+len(b))) {
		if err := q.Out(out); err != nil {
			return err
		}
	}
	if hub.MaxBatchBytes.Alone(len(b)) {
		return out(b)
	}
	p := q.Buffer()
	*p = append(*p, b...)
	return nil
}

// Out writes what the batch holds, if anything, with out, in the middle of
// a batch: the batch is then empty and keeps its buffer for the rest.
func (q *Batch) Out(out func([]byte) error) error {
	if q.buf == nil || len(*q.buf) == 0 {
		return nil
	}
	b := *q.buf
	*q.buf = b[:0]
	return out(b)
}

// Done writes what the batch holds, if anything, with out, and puts its
// buffer back in the pool: the batch is over.
func (q *Batch) Done(out func([]byte) error) error {
	if q.buf == nil {
		return nil
	}
	b := q.buf
	q.buf = nil
	var err error
	if len(*b) > 0 {
		err = out(*b)
	}
	if cap(*b) <= maxPooled {
		*b = (*b)[:0]
		pool.Put(b)
	}
	return err
}

// Paths are the URL paths of the streams among services' methods (as
// Connect, gRPC and gRPC-Web route them: /package.Service/Method): the
// one answer to "is this request a stream?" before connect routes it. (A
// connect interceptor learns the same from connect, which calls its
// WrapStreamingHandler for exactly these methods.)
func Paths(services ...protoreflect.ServiceDescriptor) map[string]bool {
	paths := make(map[string]bool)
	for _, service := range services {
		methods := service.Methods()
		for i := range methods.Len() {
			if md := methods.Get(i); md.IsStreamingClient() || md.IsStreamingServer() {
				paths["/"+string(service.FullName())+"/"+string(md.Name())] = true
			}
		}
	}
	return paths
}
