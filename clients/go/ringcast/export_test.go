package ringcast

// SetStreamHook makes s call f before it opens each stream (tests count
// and time reconnects with it).
func SetStreamHook(s *Subscription, f func()) { s.onStream = f }

// SetReconnectHook makes s call f as it decides each reconnect: backoff
// true when it waits for the backoff delay, false when it reconnects at
// once (for a fresh token).
func SetReconnectHook(s *Subscription, f func(backoff bool)) { s.onReconnect = f }
