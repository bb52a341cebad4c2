package hub

import (
	"context"
	"time"
)

// Admission is what the edge decides for a stream before it starts: the
// topics filter it takes and the instant it ends. The hub applies it
// itself (Subscribe), so a face cannot serve a topic its caller was not
// granted, nor past its credentials' end, even if it checks nothing.
type Admission struct {
	// Topics is the stream's filter (nil: every topic).
	Topics []string
	// Expiry, when set, ends the stream with ErrExpired (Request.Expiry).
	Expiry time.Time
}

// Admitter decides the Admission of a stream asking for topics on
// behalf of the caller ctx belongs to, or refuses it with an error the
// face answers as it is (Config.Admit). The edge's is edge.Admit.
type Admitter func(ctx context.Context, face string, topics []string) (Admission, error)

// admitted is the mark Admit leaves on a Request: what the Admitter
// decided. It is unexported, so only Admit sets it.
type admitted struct {
	Admission
}

// Admit runs the Admitter (Config.Admit; none: the topics as asked) on
// req and returns req admitted: Subscribe then serves it as admitted. A
// face that must answer a refusal before it starts its response (SSE,
// whose status line goes out before the stream) calls Admit first;
// Subscribe admits a request that was not. Either way every stream is
// admitted once, by the one Admitter, before it is counted.
func (h *Hub) Admit(ctx context.Context, req Request) (Request, error) {
	if req.admission != nil {
		return req, nil
	}
	a := Admission{Topics: req.Topics}
	if h.cfg.Admit != nil {
		var err error
		if a, err = h.cfg.Admit(ctx, req.Face, req.Topics); err != nil {
			return Request{}, err
		}
	}
	req.admission = &admitted{a}
	return req, nil
}

// scoped returns an admitted req as its admission says: its topics
// filter the admission's, and its expiry the earlier of its own and the
// admission's.
func (req Request) scoped() Request {
	a := req.admission
	req.Topics = a.Topics
	if !a.Expiry.IsZero() && (req.Expiry.IsZero() || a.Expiry.Before(req.Expiry)) {
		req.Expiry = a.Expiry
	}
	return req
}
