package ringcast

// SetStreamHook makes s call f before it opens each stream (tests count
// and time reconnects with it).
func SetStreamHook(s *Subscription, f func()) { s.onStream = f }
