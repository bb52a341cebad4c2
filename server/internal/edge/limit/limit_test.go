package limit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A batch larger than the burst passes when the bucket is full, then the
// client waits off the debt: it is never refused for ever.
func TestBatchLargerThanTheBurstPassesOnAFullBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: 10, PublishBurst: 4})
	l.now = func() time.Time { return now }
	if err := l.AllowPublish("c", 8, 0); err != nil {
		t.Fatalf("8 commits on a full bucket of 4: %v", err)
	}
	err := l.AllowPublish("c", 1, 0)
	var le *Error
	if !errors.As(err, &le) || le.RetryAfter <= 0 {
		t.Fatalf("next commit right after: %v, want a refusal with Retry-After", err)
	}
	now = now.Add(le.RetryAfter)
	if err := l.AllowPublish("c", 1, 0); err != nil {
		t.Fatalf("after waiting the Retry-After of %v: %v", le.RetryAfter, err)
	}
}

// TestPublishesByStringAndByBytesShareTheBucket: AllowPublish and
// AllowPublishBytes account the same id to the same client.
func TestPublishesByStringAndByBytesShareTheBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: 10, PublishBurst: 4})
	l.now = func() time.Time { return now }
	if err := l.AllowPublishBytes([]byte("ip:10.0.0.1"), 3, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AllowPublish("ip:10.0.0.1", 1, 0); err != nil {
		t.Fatalf("the fourth commit of a bucket of 4: %v", err)
	}
	var le *Error
	if err := l.AllowPublishBytes([]byte("ip:10.0.0.1"), 1, 0); !errors.As(err, &le) || le.Limit != Publish {
		t.Fatalf("a fifth commit: %v, want a publish-rate refusal", err)
	}
	if err := l.AllowPublishBytes([]byte("ip:10.0.0.2"), 4, 0); err != nil {
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
		if err := l.AllowPublishBytes(append(buf[:0], "ip:127.0.0.1"...), 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPublishBytesHaveABucketOfTheirOwn: a client that sends few commits
// but many bytes is refused by the byte bucket, with a Retry-After that
// covers what it asked for, and its refused request takes nothing from
// either bucket.
func TestPublishBytesHaveABucketOfTheirOwn(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: 1000, PublishBurst: 1000, PublishByteRate: 1000, PublishByteBurst: 4000})
	l.now = func() time.Time { return now }
	if err := l.AllowPublish("c", 1, 3000); err != nil {
		t.Fatalf("3000 bytes of a full bucket of 4000: %v", err)
	}
	err := l.AllowPublish("c", 1, 3000)
	var le *Error
	if !errors.As(err, &le) || le.Limit != PublishBytes || le.RetryAfter != 2*time.Second {
		t.Fatalf("3000 more bytes at once: %v, want a publish-byte-rate refusal with Retry-After 2s", err)
	}
	if !strings.Contains(err.Error(), "publish-byte-rate") {
		t.Fatalf("refusal %q does not name its flag", err)
	}
	if err := l.AllowPublish("c", 999, 1000); err != nil {
		t.Fatalf("999 commits of 1000 bytes: %v (the refused request took from a bucket)", err)
	}
	now = now.Add(3 * time.Second)
	if err := l.AllowPublish("c", 1, 3000); err != nil {
		t.Fatalf("after 3s: %v", err)
	}
	// A request larger than the byte bucket passes on a full bucket and
	// leaves it in debt.
	now = now.Add(time.Hour)
	if err := l.AllowPublish("c", 1, 10000); err != nil {
		t.Fatalf("10000 bytes on a full bucket of 4000: %v", err)
	}
	if err := l.AllowPublish("c", 1, 1); !errors.As(err, &le) || le.Limit != PublishBytes || le.RetryAfter != 6*time.Second+time.Millisecond {
		t.Fatalf("a byte after the debt: %v, want a refusal with Retry-After 6.001s", err)
	}
}

// TestNegativeRatesDisableOnlyTheirBucket: --publish-rate -1 leaves the
// byte bucket on, and --publish-byte-rate -1 the commit bucket.
func TestNegativeRatesDisableOnlyTheirBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: -1, PublishByteRate: 10, PublishByteBurst: 10})
	l.now = func() time.Time { return now }
	var le *Error
	if err := l.AllowPublish("c", 1000000, 10); err != nil {
		t.Fatal(err)
	}
	if err := l.AllowPublish("c", 1, 10); !errors.As(err, &le) || le.Limit != PublishBytes {
		t.Fatalf("bytes past the byte bucket with no commit bound: %v, want a publish-byte-rate refusal", err)
	}
	l = New(Config{PublishRate: 1, PublishBurst: 1, PublishByteRate: -1})
	l.now = func() time.Time { return now }
	if err := l.AllowPublish("c", 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := l.AllowPublish("c", 1, 0); !errors.As(err, &le) || le.Limit != Publish {
		t.Fatalf("commits past the commit bucket with no byte bound: %v, want a publish-rate refusal", err)
	}
}

// TestSweepKeepsClientsInDebt: the sweep that forgets idle clients keeps
// one whose byte bucket an oversized request left in debt until the debt
// is paid off, although a burst's refill time has passed; once its
// buckets are full again it is forgotten.
func TestSweepKeepsClientsInDebt(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{PublishRate: 1000, PublishBurst: 1000, PublishByteRate: 1000, PublishByteBurst: 1000})
	l.now = func() time.Time { return now }
	if err := l.AllowPublish("c", 1, 10000); err != nil {
		t.Fatalf("10000 bytes on a full bucket of 1000: %v", err)
	}
	// 2s later: a burst refills in 1s, but the debt of 9000 bytes takes 9s.
	now = now.Add(2 * time.Second)
	l.mu.Lock()
	l.sweep(now)
	_, kept := l.byID["c"]
	l.mu.Unlock()
	if !kept {
		t.Fatal("the sweep forgot a client still in debt")
	}
	var le *Error
	if err := l.AllowPublish("c", 1, 1); !errors.As(err, &le) || le.Limit != PublishBytes || le.RetryAfter != 7*time.Second+time.Millisecond {
		t.Fatalf("a byte 2s into a debt of 9s: %v, want a publish-byte-rate refusal with Retry-After 7.001s", err)
	}
	now = now.Add(time.Minute) // past the refusal's log line too
	l.mu.Lock()
	l.sweep(now)
	_, kept = l.byID["c"]
	l.mu.Unlock()
	if kept {
		t.Fatal("the sweep kept a client with full buckets and nothing else")
	}
}
