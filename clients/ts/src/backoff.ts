import { Code, ConnectError } from "@connectrpc/connect";

import { SHARED_DEFAULTS } from "./defaults_gen.js";

/**
 * Reconnect backoff: capped exponential with full jitter and a floor.
 *
 * The n-th consecutive reconnect (n = 0, 1, …) waits a uniformly random
 * delay in `[minMs, min(maxMs, initialMs · 2^n)]`. The floor keeps a server
 * that ends every stream at once from turning the client into a busy loop;
 * the jitter spreads a crowd of clients reconnecting after a restart. `n`
 * goes back to 0 after a healthy stream: one that moved the cursor to a new
 * position (delivered a fact, or a Progress or status event beyond the
 * cursor) or stayed open at least `resetMs`. A stream that only says hello
 * (a status at the cursor's position, CaughtUp, a resync) and ends is not
 * healthy, so a server that ends every stream early cannot keep the client
 * at the shortest delays.
 */
export interface BackoffOptions {
  /** Ceiling of the first delay (default 250 ms). */
  initialMs?: number;
  /** Cap of every delay (default 30 000 ms). */
  maxMs?: number;
  /** Floor of every delay (default 100 ms). */
  minMs?: number;
  /** A stream open at least this long counts as healthy (default 30 000 ms). */
  resetMs?: number;
}

/** The defaults of {@link BackoffOptions}, shared with the Go client (clients/conformance/defaults.json). */
export const DEFAULT_BACKOFF: Readonly<Required<BackoffOptions>> = SHARED_DEFAULTS.backoff;

/**
 * resolveBackoff settles the bounds, as the Go client does
 * (clients/conformance/backoff.json holds the cases both clients check): a
 * bound that is unset, zero, negative or not finite takes its default;
 * minMs, initialMs and maxMs below 1 ms count as 1 ms; the cap wins: maxMs
 * lowers minMs and initialMs, so no delay ever exceeds it; minMs raises
 * initialMs. So `{ maxMs: 80 }` waits 80 ms every time, and
 * `{ minMs: 1000 }` waits 1 s at first.
 */
export function resolveBackoff(o: BackoffOptions = {}): Required<BackoffOptions> {
  const maxMs = Math.max(1, given(o.maxMs, DEFAULT_BACKOFF.maxMs));
  const minMs = Math.min(maxMs, Math.max(1, given(o.minMs, DEFAULT_BACKOFF.minMs)));
  const initialMs = Math.min(maxMs, Math.max(minMs, given(o.initialMs, DEFAULT_BACKOFF.initialMs)));
  const resetMs = given(o.resetMs, DEFAULT_BACKOFF.resetMs);
  return { initialMs, maxMs, minMs, resetMs };
}

/** backoffDelay is the delay before reconnect number `attempt` (0-based). */
export function backoffDelay(b: Required<BackoffOptions>, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(attempt, 40));
  return b.minMs + random() * (ceiling - b.minMs);
}

/** given is v when it is a positive finite number, else the default d. */
function given(v: number | undefined, d: number): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : d;
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

/**
 * retryAfterMs is the wait the server asked for with a resource_exhausted
 * refusal (a per-client limit: its Retry-After header, in seconds), or 0.
 * A retry waits at least that long, whatever the backoff says, so a client
 * over a limit backs off instead of hammering the server. The wait is
 * capped at 5 minutes (shared with the Go client: clients/conformance/defaults.json).
 */
export function retryAfterMs(error: unknown): number {
  if (!(error instanceof ConnectError) || error.code !== Code.ResourceExhausted) return 0;
  return parseRetryAfterMs(error.metadata.get("retry-after") ?? "");
}

/**
 * parseRetryAfterMs reads a Retry-After value as every client does
 * (clients/conformance/retry-after.json): whole seconds in ASCII digits,
 * spaces or tabs around them allowed, capped at retryAfterCapMs; anything
 * else ("5s", "-1", "1.5", an HTTP-date) is no wait.
 */
export function parseRetryAfterMs(value: string): number {
  const m = /^[ \t]*([0-9]+)[ \t]*$/.exec(value);
  if (!m) return 0;
  return Math.min(Number(m[1]) * 1000, SHARED_DEFAULTS.retryAfterCapMs);
}
