package app

// SetStoreOpened sets the hook New calls once the store is open, before
// the hub reads it (nil: none).
func SetStoreOpened(f func()) { storeOpened = f }
