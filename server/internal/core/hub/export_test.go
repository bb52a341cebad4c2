package hub

// testSlots are the encoding slots the hub's tests cache encodings in, as
// faces do with theirs: as many as the faces ringcast has, claimed once
// for the whole test binary.
var testSlots = func() (s [inlineSlots]Slot) {
	for i := range s {
		s[i] = NewSlot()
	}
	return s
}()

// TestSlots exports testSlots to the external tests.
var TestSlots = testSlots
