/**
 * Reconnect backoff: capped exponential with full jitter and a floor.
 *
 * The n-th consecutive reconnect (n = 0, 1, …) waits a uniformly random
 * delay in `[minMs, min(maxMs, initialMs · 2^n)]`. The floor keeps a server
 * that ends every stream at once from turning the client into a busy loop;
 * the jitter spreads a crowd of clients reconnecting after a restart. `n`
 * goes back to 0 after a healthy stream (one that delivered a position or
 * caught up).
 */
export interface BackoffOptions {
  /** Ceiling of the first delay (default 250 ms). */
  initialMs?: number;
  /** Cap of the ceiling (default 30 000 ms). */
  maxMs?: number;
  /** Floor of every delay (default 100 ms; values below 1 ms count as 1 ms). */
  minMs?: number;
}

/** The defaults of {@link BackoffOptions}. */
export const DEFAULT_BACKOFF: Readonly<Required<BackoffOptions>> = Object.freeze({
  initialMs: 250,
  maxMs: 30_000,
  minMs: 100,
});

/** resolveBackoff fills in defaults and orders the bounds. */
export function resolveBackoff(o: BackoffOptions = {}): Required<BackoffOptions> {
  const minMs = Math.max(1, finite(o.minMs, DEFAULT_BACKOFF.minMs));
  const initialMs = Math.max(minMs, finite(o.initialMs, DEFAULT_BACKOFF.initialMs));
  const maxMs = Math.max(initialMs, finite(o.maxMs, DEFAULT_BACKOFF.maxMs));
  return { initialMs, maxMs, minMs };
}

/** backoffDelay is the delay before reconnect number `attempt` (0-based). */
export function backoffDelay(b: Required<BackoffOptions>, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(attempt, 40));
  return b.minMs + random() * (ceiling - b.minMs);
}

function finite(v: number | undefined, d: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : d;
}

/** sleep resolves after ms, or rejects with the signal's reason on abort. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
