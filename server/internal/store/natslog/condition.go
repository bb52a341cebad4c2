package natslog

// condition describes a failure of a request to JetStream by the store's
// condition (StoreError): an error wrapping ErrStoreFull or
// ErrStoreUnavailable whose message names the condition, not the NATS
// client. Other errors (a damaged or replaced log, a bad request) are
// returned as they are. Whether the store takes commits now is asked with
// Available; the server's readiness owns what follows from a refusal.
func (l *Log) condition(err error) error {
	return StoreError(err)
}
