package hub

import "time"

// maxHoldFactor bounds how far the hold between wake-ups grows under
// sustained overload: up to this many times Config.Coalesce.
const maxHoldFactor = 8

// notify wakes waiting subscribers after each kick. Closing a channel costs
// O(waiters), so it happens here rather than on the publisher's path; kicks
// that arrive meanwhile coalesce into one wake-up.
//
// Wake-ups are adaptive (Config.Coalesce > 0):
//
//   - a kick that finds no stream writing (the streams are keeping up and
//     waiting) wakes them at once, so an event pays no delay at low and
//     moderate rates, whatever the spacing of the commits;
//   - a kick that finds streams still writing an earlier batch (writes are
//     backing up) is held until a hold has passed since the previous
//     wake-up: meanwhile the busy streams pick up the new commits on their
//     own when their write returns, and the waiting ones are woken once for
//     everything published in the hold, each writing it in one batch;
//   - the hold is Coalesce, doubled (up to maxHoldFactor×Coalesce) each
//     time a held wake-up still finds streams writing — sustained overload,
//     where bigger batches buy throughput — and back to Coalesce as soon as
//     a wake-up finds none.
func (h *Hub) notify() {
	defer h.notifierWG.Done()
	window := time.NewTimer(time.Hour)
	window.Stop()
	defer window.Stop()
	hold := h.cfg.Coalesce
	for {
		select {
		case <-h.done:
			return
		case <-h.kick:
		}
		if h.cfg.Coalesce > 0 && h.writing.Load() > 0 {
			// The previous wake-up, by the notifier or by signal.
			if wait := hold - (time.Since(monoStart) - time.Duration(h.lastWake.Load())); wait > 0 {
				window.Reset(wait)
				select {
				case <-h.done:
					return
				case <-window.C:
				}
			}
			if h.writing.Load() > 0 {
				hold = min(2*hold, maxHoldFactor*h.cfg.Coalesce)
			} else {
				hold = h.cfg.Coalesce
			}
		} else {
			hold = h.cfg.Coalesce
		}
		h.wakeNow()
	}
}
