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
