package natslog

// DirectGets is how many direct get requests l has sent and how many
// messages they returned.
func (l *Log) DirectGets() (requests, msgs uint64) {
	return l.directGets.Load(), l.directMsgs.Load()
}
