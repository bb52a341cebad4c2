package app

// SetBeforeStore sets the hook Run calls before it opens and reads the
// store (nil: none).
func SetBeforeStore(f func()) { beforeStore = f }
