package limit

import (
	"errors"
	"testing"
	"time"
)

// A batch larger than the burst passes when the bucket is full, then the
// client waits off the debt: it is never refused for ever.
func TestBatchLargerThanTheBurstPassesOnAFullBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: 10, PublishBurst: 4})
	l.now = func() time.Time { return now }
	if err := l.AllowPublish("c", 8); err != nil {
		t.Fatalf("8 commits on a full bucket of 4: %v", err)
	}
	err := l.AllowPublish("c", 1)
	var le *Error
	if !errors.As(err, &le) || le.RetryAfter <= 0 {
		t.Fatalf("next commit right after: %v, want a refusal with Retry-After", err)
	}
	now = now.Add(le.RetryAfter)
	if err := l.AllowPublish("c", 1); err != nil {
		t.Fatalf("after waiting the Retry-After of %v: %v", le.RetryAfter, err)
	}
}

// TestPublishesByStringAndByBytesShareTheBucket: AllowPublish and
// AllowPublishBytes account the same id to the same client.
func TestPublishesByStringAndByBytesShareTheBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: 10, PublishBurst: 4})
	l.now = func() time.Time { return now }
	if err := l.AllowPublishBytes([]byte("ip:10.0.0.1"), 3); err != nil {
		t.Fatal(err)
	}
	if err := l.AllowPublish("ip:10.0.0.1", 1); err != nil {
		t.Fatalf("the fourth commit of a bucket of 4: %v", err)
	}
	var le *Error
	if err := l.AllowPublishBytes([]byte("ip:10.0.0.1"), 1); !errors.As(err, &le) || le.Limit != Publish {
		t.Fatalf("a fifth commit: %v, want a publish-rate refusal", err)
	}
	if err := l.AllowPublishBytes([]byte("ip:10.0.0.2"), 4); err != nil {
		t.Fatalf("another client's bucket: %v", err)
	}
}

// BenchmarkAllowPublishBytes: a known client's publish, its id built on the
// stack as the Connect interceptor does, allocates nothing.
func BenchmarkAllowPublishBytes(b *testing.B) {
	l := New(Config{PublishRate: 1e12, PublishBurst: 1 << 30})
	b.ReportAllocs()
	for b.Loop() {
		var buf [64]byte
		if err := l.AllowPublishBytes(append(buf[:0], "ip:127.0.0.1"...), 1); err != nil {
			b.Fatal(err)
		}
	}
}
