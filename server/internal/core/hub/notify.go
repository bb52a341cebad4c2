package hub

import "time"

// maxHoldFactor bounds how far the hold between wake-ups grows under
// sustained overload: up to this many times Config.Coalesce.
const maxHoldFactor = 16

// MaxHold is the longest the notifier holds a live wake-up, with
// Config.Coalesce set to coalesce.
func MaxHold(coalesce time.Duration) time.Duration {
	return maxHoldFactor * coalesce
}

// notify wakes waiting subscribers after each kick. Closing a channel costs
// O(waiters), so it happens here rather than on the publisher's path; kicks
// that arrive meanwhile coalesce into one wake-up.
//
// Wake-ups are adaptive (Config.Coalesce > 0):
//
//   - a kick that finds the server keeping up (no stream writing, and the
//     notifier not running late) wakes the streams at once, so an event
//     pays no delay at low and moderate rates, whatever the spacing of the
//     commits;
//   - a kick that finds the server busy — streams still writing an earlier
//     batch, or the notifier itself taking the kick late because
//     goroutines queue for the CPUs — is held until a hold has passed
//     since the previous wake-up: meanwhile the busy streams pick up the
//     new commits on their own when their write returns, and the waiting
//     ones are woken once for everything published in the hold, each
//     writing it in one batch;
//   - the hold starts at Coalesce and follows the load (nextHold): doubled,
//     up to maxHoldFactor×Coalesce, each time a held wake-up still finds
//     the server busy — sustained overload, where bigger batches buy
//     throughput — and halved, down to Coalesce, each time a wake-up finds
//     it keeping up.
//
// Taking late is what tells a saturated server from a merely busy one: at
// 100 subscribers and 16 publishers sending as fast as they can, the
// streams often finish their writes between wake-ups, yet every commit
// waits for a CPU; batching more then leaves more of the CPUs to the
// publishers (docs/performance.md measures how much).
func (h *Hub) notify() {
	defer h.notifierWG.Done()
	window := time.NewTimer(time.Hour)
	window.Stop()
	defer window.Stop()
	hold := h.cfg.Coalesce
	var ready time.Duration // when the notifier last finished a wake-up
	for {
		select {
		case <-h.done:
			return
		case <-h.kick:
		}
		if h.cfg.Coalesce == 0 {
			h.wakeNow()
			continue
		}
		now := time.Since(monoStart)
		late := h.late(kickDelay(now, time.Duration(h.kickedAt.Load()), ready))
		if h.writing.Load() > 0 || late {
			// The previous wake-up, by the notifier or by signal.
			if wait := hold - (now - time.Duration(h.lastWake.Load())); wait > 0 {
				window.Reset(wait)
				select {
				case <-h.done:
					return
				case <-window.C:
				}
				late = late || h.late(time.Since(monoStart)-(now+wait))
			}
			hold = nextHold(hold, h.cfg.Coalesce, h.writing.Load() > 0 || late)
		} else {
			hold = nextHold(hold, h.cfg.Coalesce, false)
		}
		h.wakeNow()
		ready = time.Since(monoStart)
	}
}

// kickDelay is how long a kick sent at sent waited for the notifier, which
// took it at now and was last ready to take one at ready. A kick sent
// while the notifier was holding or waking (or one whose send raced with
// its stamp, leaving an earlier kick's time) did not wait for a CPU
// before ready: only the time since then counts.
func kickDelay(now, sent, ready time.Duration) time.Duration {
	return now - max(sent, ready)
}

// late reports whether the notifier ran this long after it was due (a
// kick sent, a hold's timer fired): more than a quarter of Coalesce means
// runnable goroutines are queueing for the CPUs.
func (h *Hub) late(by time.Duration) bool {
	return by > h.cfg.Coalesce/4
}

// nextHold is the hold after a wake-up: doubled, up to
// maxHoldFactor×coalesce, when the server was busy; halved, down to
// coalesce, when it kept up. Halving rather than starting over keeps the
// batches large through the brief lulls of a sustained overload, and
// still brings the hold back to coalesce within four wake-ups.
func nextHold(hold, coalesce time.Duration, busy bool) time.Duration {
	if busy {
		return min(2*hold, MaxHold(coalesce))
	}
	return max(hold/2, coalesce)
}
