import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";

import {
  EventService,
  OnUnservable,
  Snapshot,
  SubscribeEventsRequestSchema,
  type Commit,
  type Gap,
  type ResyncRequired,
  type SubscribeEventsRequest,
  type SubscribeEventsResponse,
} from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { SHARED_DEFAULTS } from "./defaults_gen.js";
import { backoffDelay, resolveBackoff, retryAfterMs, sleep, type BackoffOptions } from "./backoff.js";
import { checkCursor, cursorAt, formatCursor, formatEpoch, parseCursor, ZERO_CURSOR, type Cursor } from "./cursor.js";
import type { FactItem, ResyncedSignal, StreamItem } from "./items.js";
import { onUnservableValue, reasonName, snapshotValue, type OnUnservableName, type SnapshotName } from "./names.js";

/** Options of {@link subscribe}. */
export interface SubscribeOptions {
  /** Where to resume: a cursor or its string form. Default: nothing consumed (snapshot first). */
  cursor?: Cursor | string;
  /** Topic filter: a fact matches an entry equal to its topic or a prefix ending at "/". Empty = all. */
  topics?: readonly string[];
  /** What a subscribe from nothing (or an inline resync) delivers first. Default "retained". */
  snapshot?: SnapshotName | Snapshot;
  /**
   * What an unservable cursor produces: "resync_terminal" (default; the
   * client resubscribes from 0) or "snapshot_inline" (the server sends the
   * snapshot on the same stream, saving a round trip). Either way the
   * application sees one "resynced" signal before the snapshot.
   */
  onUnservable?: OnUnservableName | OnUnservable;
  /**
   * Bounded read: end the iteration once position untilSeq is consumed (the
   * iteration ends right after the item that covers it, without waiting for
   * another message).
   */
  untilSeq?: bigint;
  /** Bounded read: end the iteration after the "caught_up" signal. */
  endAtHead?: boolean;
  /**
   * Start at a point in time instead of with a snapshot: the first subscribe
   * sends `sinceTime` (with sinceSeq 0), and the server replays every
   * retained commit whose event time is at or after it, oldest first, then
   * "caught_up" and the tail. It applies only while the subscription has no
   * position: once any positioned message arrived (a fact, Progress, a
   * positioned status) the subscription resumes by its cursor, and after a
   * resync it starts from the zero cursor (a snapshot) as usual — sinceTime
   * is never sent again. So a saved `cursor` wins: pass both to start from
   * the time the first time and from the saved cursor later. When commits
   * at or after the time may have been evicted, the server answers as for a
   * cursor below its window (a "resynced" signal, then a snapshot). An
   * invalid Date makes subscribe() throw a RangeError.
   */
  sinceTime?: Date;
  /**
   * Aborting ends the iteration promptly: a pending next() (or the next
   * call, when the abort came while the application held an item) rejects
   * with the signal's reason, and the cursor stays on the last item handed
   * over.
   */
  signal?: AbortSignal;
  /** Headers sent with every subscribe. */
  headers?: HeadersInit;
  /**
   * Bearer token for a server with `--auth jwt` (docs/security.md), sent as
   * `Authorization: Bearer <token>`. A function is called before every
   * (re)connect, so it can hand out a fresh token each time. When the
   * server ends a stream because its token expired (Unauthenticated,
   * "token expired"; see {@link isTokenExpired}), the subscription
   * reconnects at once with a fresh token from the function and resumes
   * from its cursor. That happens once per expiry: a stream that ends with
   * "token expired" again before it was healthy (open `backoff.resetMs`)
   * is reconnected after the backoff delay, so tokens that do not last
   * never make a loop. If a fresh token is refused at once, or on any
   * other Unauthenticated or PermissionDenied error, next() rejects with
   * the ConnectError (no retry loop). A function that throws or rejects
   * makes next() reject with an Unauthenticated ConnectError whose cause
   * is what it threw.
   */
  token?: string | (() => Promise<string>);
  /** Reconnect backoff (see BackoffOptions). */
  backoff?: BackoffOptions;
  /**
   * A stream that delivers nothing (not even a heartbeat) for this long is
   * considered dead and reconnected. Time the application spends with an
   * item does not count. Undefined or 0: three heartbeat intervals (plus a
   * second) as the server announces them in CaughtUp and ServerStatus (45 s
   * until it does). Negative: no idle check.
   * NaN or an infinite value makes subscribe() throw a RangeError.
   */
  idleTimeoutMs?: number;
  /**
   * Called on connection lifecycle changes (for status displays and logs).
   * It runs inside the iteration: an exception it throws is not retried but
   * ends the iteration (the pending next() rejects with it).
   */
  onConnection?: (event: ConnectionEvent) => void;
}

/** Connection lifecycle, reported through SubscribeOptions.onConnection. */
export type ConnectionEvent =
  /** A subscribe is being sent with this cursor. */
  | { readonly state: "connecting"; readonly attempt: number; readonly cursor: Cursor }
  /** The stream's first response arrived. */
  | { readonly state: "open"; readonly epoch: bigint }
  /**
   * The stream caught up (reported on every stream, while the "caught_up"
   * item is yielded only when the application was not already live).
   */
  | { readonly state: "caught_up"; readonly epoch: bigint; readonly headSeq: bigint }
  /** The stream ended (OK, on error, or to resync); the client reconnects after delayMs. */
  | { readonly state: "reconnecting"; readonly attempt: number; readonly delayMs: number; readonly error?: ConnectError; readonly resync: boolean };

/**
 * Codes that no reconnect can fix: surfaced to the caller (next() rejects
 * with the ConnectError). Every other code (unavailable, unknown, internal,
 * deadline_exceeded, resource_exhausted, aborted, data_loss, and canceled
 * when it did not come from the caller's signal), network errors and
 * streams that end with OK status are retried with the cursor. The same
 * classification as the Go client's: both read clients/conformance/defaults.json.
 */
export const PERMANENT_CODES: ReadonlySet<Code> = new Set(SHARED_DEFAULTS.permanentCodes);

const IDLE = SHARED_DEFAULTS.idleTimeout;

/**
 * The message of the Unauthenticated error that ends a stream at its token's
 * expiry: the server's wording, shared with the Go client
 * (clients/conformance/defaults.json, which a server test checks).
 */
export const TOKEN_EXPIRED_MESSAGE = SHARED_DEFAULTS.tokenExpiredMessage;

/**
 * isTokenExpired reports whether err is the server's "token expired" end of a
 * stream (or refusal of a call): the one Unauthenticated error a fresh token
 * can fix. Any other Unauthenticated or PermissionDenied error means "not
 * authorised" (a bad token, or a topic outside its grants).
 */
export function isTokenExpired(err: unknown): boolean {
  return err instanceof ConnectError && err.code === Code.Unauthenticated && err.rawMessage === TOKEN_EXPIRED_MESSAGE;
}

/** authorization resolves the Authorization header value for one call. */
async function authorization(token: string | (() => Promise<string>)): Promise<string> {
  try {
    return `Bearer ${typeof token === "string" ? token : await token()}`;
  } catch (e) {
    throw new ConnectError(`token source failed: ${e instanceof Error ? e.message : String(e)}`, Code.Unauthenticated, undefined, undefined, e);
  }
}
/** The longest delay setTimeout honours (longer ones fire at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The reason the internal signal carries when return() ends a waiting next(). */
const STOPPED: unique symbol = Symbol("ringcast.stopped");
/** The reason that ends a reconnect delay early on reconnectNow(). */
const WOKEN: unique symbol = Symbol("ringcast.woken");

/**
 * subscribe opens a resumable subscription over any Connect transport
 * (connect-web's createGrpcWebTransport / createConnectTransport, or
 * connect-node's gRPC, gRPC-Web and Connect transports). Nothing is sent
 * until iteration starts. See {@link Subscription}.
 */
export function subscribe(transport: Transport, options: SubscribeOptions = {}): Subscription {
  return new Subscription(transport, options);
}

/**
 * Subscription is an async iterable of facts and lifecycle signals that
 * survives disconnects, server restarts, lease ends and lag.
 *
 * Consumption: an item is CONSUMED the moment the iterator hands it to the
 * application (the promise returned by next() resolves with it). The cursor
 * then already covers it, so a `for await` body that applies an item and
 * then reads `subscription.cursor` gets a cursor to persist alongside the
 * item's effects. Persist it only after those effects succeeded — never on
 * an error path: a cursor saved before (or instead of) the effects skips
 * the item on resume. Leaving the loop (`break`, `return`, a throw in the
 * body) keeps the cursor at the item after the last one delivered, even in
 * the middle of a commit: resuming from it delivers the rest of that commit
 * and nothing twice.
 *
 * Ending: `signal` ends the iteration at any moment — a next() waiting for
 * the network or a reconnect rejects with the signal's reason at once. The
 * iterator's return() (what `break` calls) also ends a waiting next(): that
 * next() resolves with `done: true`.
 *
 * Progress and server status events move the cursor to (seq, 0) and
 * heartbeats keep the stream alive; none is yielded. "caught_up" is yielded
 * on each transition to live: not again after a reconnect whose replay
 * delivered nothing. A Subscription can be iterated once.
 */
export class Subscription implements AsyncIterable<StreamItem> {
  readonly #client;
  readonly #opts: SubscribeOptions;
  #cursor: Cursor;
  #started = false;
  /** The idle timeout in ms (< 0: none); the server's heartbeat adjusts it unless set by the caller. */
  #idleTimeoutMs: number;
  readonly #idleFixed: boolean;
  /** The application has been told "caught_up" and nothing replayed since. */
  #live = false;
  /** Ends the reconnect delay being waited out, if any (see reconnectNow). */
  #wake: (() => void) | undefined;
  /** The subscription resynced: a zero cursor means a snapshot, never sinceTime again. */
  #timeSpent = false;

  constructor(transport: Transport, options: SubscribeOptions = {}) {
    this.#client = createClient(EventService, transport);
    this.#opts = options;
    const c = options.cursor;
    this.#cursor = c === undefined ? ZERO_CURSOR : typeof c === "string" ? parseCursor(c) : Object.freeze({ ...checkCursor(c) });
    const idle = options.idleTimeoutMs;
    if (idle !== undefined && (typeof idle !== "number" || !Number.isFinite(idle))) {
      throw new RangeError(`ringcast: idleTimeoutMs must be a finite number of milliseconds (negative disables the check), got ${String(idle)}`);
    }
    this.#idleFixed = idle !== undefined && idle !== 0;
    this.#idleTimeoutMs = this.#idleFixed ? (idle! < 0 ? -1 : Math.min(idle!, MAX_TIMER_MS)) : IDLE.untilHeartbeatKnownMs;
    resolveBackoff(options.backoff); // validate early
    const since = options.sinceTime;
    if (since !== undefined && (!(since instanceof Date) || Number.isNaN(since.getTime()))) {
      throw new RangeError(`ringcast: sinceTime must be a valid Date, got ${String(since)}`);
    }
  }

  /** The position of what the application has consumed, current at any moment. */
  get cursor(): Cursor {
    return this.#cursor;
  }

  /**
   * reconnectNow cuts short the delay before the next reconnect (for a
   * "Reconnect now" button): the next attempt starts at once. It returns
   * false, and does nothing, when no reconnect delay is being waited out.
   */
  reconnectNow(): boolean {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
    return wake !== undefined;
  }

  /** The cursor's string form (see formatCursor). */
  cursorString(): string {
    return formatCursor(this.#cursor);
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamItem, void, undefined> {
    if (this.#started) {
      throw new Error("ringcast: a Subscription can be iterated only once");
    }
    this.#started = true;
    // One signal for the loop: the caller's, or return() ending a waiting next().
    const stop = new AbortController();
    const user = this.#opts.signal;
    const onUserAbort = () => stop.abort(user?.reason);
    if (user?.aborted) {
      onUserAbort();
    } else {
      user?.addEventListener("abort", onUserAbort, { once: true });
    }
    const release = () => user?.removeEventListener("abort", onUserAbort);
    return new SubscriptionIterator(this.#run(stop.signal), stop, release);
  }

  async *#run(signal: AbortSignal): AsyncGenerator<StreamItem, void, undefined> {
    const o = this.#opts;
    const backoff = resolveBackoff(o.backoff);
    let attempt = 0;
    let refreshed = false; // the last stream was reopened for an expired token
    for (;;) {
      signal.throwIfAborted();
      if (this.#boundReached()) {
        return;
      }
      let headers = o.headers;
      if (o.token !== undefined) {
        const h = new Headers(o.headers);
        h.set("Authorization", await authorization(o.token));
        signal.throwIfAborted();
        headers = h;
      }
      // Callbacks run outside the transport error handling: what they throw
      // reaches the caller and is not retried.
      o.onConnection?.({ state: "connecting", attempt, cursor: this.#cursor });
      const started = Date.now();
      const call = new AbortController();
      const onAbort = () => call.abort(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      const idle = new Watchdog(() => call.abort(new ConnectError("no message within the idle timeout", Code.Unavailable)));
      // Once the call is aborted (the caller's signal, the idle timeout)
      // its pending read is given up, whether or not the transport settles
      // it: fetch in Node has been seen to leave a streaming body's read
      // pending after an abort, which would hold the subscription for ever.
      const abandoned = new Promise<never>((_, reject) => {
        call.signal.addEventListener("abort", () => reject(call.signal.reason), { once: true });
      });
      abandoned.catch(() => {});
      const st: AttemptState = { caughtUp: false, progress: false, resync: false, ended: false, broken: false, opened: false };
      let error: ConnectError | undefined;
      let stream: AsyncIterator<SubscribeEventsResponse> | undefined;
      try {
        stream = this.#client.subscribeEvents(this.#request(), { signal: call.signal, headers })[Symbol.asyncIterator]();
        idle.arm(this.#idleTimeoutMs);
        for (;;) {
          let r: IteratorResult<SubscribeEventsResponse>;
          try {
            r = await Promise.race([stream.next(), abandoned]);
          } catch (e) {
            // Only what the transport throws is classified and maybe retried.
            signal.throwIfAborted();
            error = ConnectError.from(e);
            // A stream that opened and then reached its token's expiry is
            // reopened with a fresh token (at once, or after the backoff
            // when it expired again soon after the last refresh; below); a
            // fresh token refused at once (expired already) is an error.
            if (isTokenExpired(error) && (st.opened || !refreshed)) {
              break; // reconnect at once with a fresh token (below)
            }
            if (PERMANENT_CODES.has(error.code)) {
              throw error;
            }
            break;
          }
          if (r.done) {
            break;
          }
          idle.disarm();
          const res = r.value;
          if (!st.opened) {
            st.opened = true;
            o.onConnection?.({ state: "open", epoch: res.instanceEpoch });
          }
          // #handle runs lazily, one item at a time: the cursor moves to an
          // item just before it is handed over, never further.
          for (const item of this.#handle(res, st)) {
            yield item;
            // The application is back for more: stop here if it aborted
            // meanwhile, or if that item completed the bounded read.
            signal.throwIfAborted();
            if (this.#boundReached()) {
              return;
            }
          }
          if (st.ended || this.#boundReached()) {
            return;
          }
          if (st.broken) {
            error = new ConnectError(`stream switched from epoch ${formatEpoch(this.#cursor.epoch)} to ${formatEpoch(res.instanceEpoch)} without a resync`, Code.Internal);
            break;
          }
          idle.arm(this.#idleTimeoutMs);
        }
      } finally {
        idle.disarm();
        signal.removeEventListener("abort", onAbort);
        call.abort();
        stream?.return?.().catch(() => {});
      }
      const lived = Date.now() - started >= backoff.resetMs;
      if (isTokenExpired(error)) {
        if (!refreshed || lived) {
          // The token ran out during a healthy stream: reconnect at once
          // with a fresh token, from the cursor.
          refreshed = true;
          continue;
        }
        // Expired again soon after the reconnect for a fresh token: the
        // token function hands out tokens that do not last, or the server
        // cut a stream it had just accepted. Back off as for any failed
        // stream; never a loop without a delay.
      } else {
        refreshed = false;
      }
      if (st.progress || lived) {
        attempt = 0;
      }
      const delayMs = Math.max(backoffDelay(backoff, attempt), retryAfterMs(error));
      o.onConnection?.({ state: "reconnecting", attempt, delayMs, error, resync: st.resync });
      attempt++;
      // The delay ends early on the caller's signal or on reconnectNow().
      signal.throwIfAborted();
      const wake = new AbortController();
      const onStop = () => wake.abort(signal.reason);
      signal.addEventListener("abort", onStop, { once: true });
      this.#wake = () => wake.abort(WOKEN);
      try {
        await sleep(delayMs, wake.signal);
      } catch (e) {
        signal.throwIfAborted();
        if (e !== WOKEN) throw e;
      } finally {
        signal.removeEventListener("abort", onStop);
        this.#wake = undefined;
      }
    }
  }

  /** #handle applies one response to the cursor and returns the items to yield. */
  *#handle(res: SubscribeEventsResponse, st: AttemptState): Generator<StreamItem, void, undefined> {
    const ev = res.event;
    switch (ev.case) {
      case "commit":
        yield* this.#commit(res, ev.value, st);
        return;
      case "progress":
      case "serverStatus":
        if (ev.case === "serverStatus" && res.seq === 0n) {
          // A replica's status on a durable store: unpositioned
          // (docs/protocol.md, "Stores"); it moves no cursor, whatever its
          // epoch, and does not make the stream healthy.
          this.#heartbeat(ev.value.limits?.heartbeatInterval);
          return;
        }
        if (this.#beyondBound(res)) {
          st.ended = true;
          return;
        }
        if (this.#switchedEpoch(res)) {
          st.broken = true;
          return;
        }
        if (res.seq > this.#cursor.seq || res.instanceEpoch !== this.#cursor.epoch) {
          this.#cursor = cursorAt(res.instanceEpoch, res.seq, 0, res.fingerprint);
          st.progress = true;
        }
        if (ev.case === "serverStatus") {
          this.#heartbeat(ev.value.limits?.heartbeatInterval);
        }
        return;
      case "caughtUp":
        this.#heartbeat(ev.value.heartbeatInterval);
        st.caughtUp = true;
        this.#opts.onConnection?.({ state: "caught_up", epoch: res.instanceEpoch, headSeq: ev.value.headSeq });
        if (!this.#live) {
          this.#live = true;
          yield Object.freeze({
            kind: "caught_up",
            epoch: res.instanceEpoch,
            headSeq: ev.value.headSeq,
            snapshotEvictedKeys: ev.value.snapshotEvictedKeys,
          });
        }
        if (this.#opts.endAtHead) {
          st.ended = true;
        }
        return;
      case "gap":
      case "resyncRequired":
        st.resync = ev.case === "resyncRequired";
        this.#live = false;
        yield this.#resynced(res, ev.value, ev.case === "gap");
        return;
      case "heartbeat":
      case undefined:
        return;
    }
  }

  /** #heartbeat takes the interval the server announced as the basis of the idle timeout (unless set by the caller). */
  #heartbeat(hb: { seconds: bigint; nanos: number } | undefined): void {
    if (hb === undefined || this.#idleFixed) {
      return;
    }
    const ms = Number(hb.seconds) * 1000 + hb.nanos / 1e6;
    if (ms > 0 && Number.isFinite(ms)) {
      this.#idleTimeoutMs = Math.min(IDLE.heartbeatMultiple * ms + IDLE.graceMs, MAX_TIMER_MS);
    }
  }

  *#commit(res: SubscribeEventsResponse, c: Commit, st: AttemptState): Generator<FactItem, void, undefined> {
    const seq = res.seq;
    if (this.#beyondBound(res)) {
      st.ended = true;
      return;
    }
    if (this.#switchedEpoch(res)) {
      st.broken = true;
      return;
    }
    const cur = this.#cursor;
    // What this cursor already covers (defensive: the server never resends it).
    const sameEpoch = cur.epoch === res.instanceEpoch;
    if (sameEpoch && (seq < cur.seq || (seq === cur.seq && cur.fact === 0 && seq > 0n))) {
      return;
    }
    const from = sameEpoch && seq === cur.seq ? cur.fact : 0;
    const facts = c.facts.filter((f) => f.index >= from);
    st.progress = true;
    if (facts.length === 0) {
      // Nothing (more) of this commit for this stream: it is consumed.
      this.#cursor = cursorAt(res.instanceEpoch, seq, 0, res.fingerprint);
      return;
    }
    const eventTime = res.eventTime ? timestampDate(res.eventTime) : undefined;
    if (!st.caughtUp) {
      this.#live = false; // a replay: tell the application when it is over
    }
    for (let i = 0; i < facts.length; i++) {
      const f = facts[i]!;
      const last = i === facts.length - 1;
      const item: FactItem = {
        kind: "fact",
        epoch: res.instanceEpoch,
        seq,
        index: f.index,
        last,
        factCount: c.factCount,
        topic: f.topic,
        type: f.type,
        key: f.key,
        contentType: f.contentType,
        ...(f.payload.case === "data" ? { data: f.payload.value } : {}),
        ...(f.payload.case === "binaryData" ? { binaryData: f.payload.value } : {}),
        ...(eventTime ? { eventTime } : {}),
        ...(c.traceparent ? { traceparent: c.traceparent } : {}),
      };
      // Consumed as it is handed over: the cursor moves first.
      this.#cursor = cursorAt(res.instanceEpoch, seq, last ? 0 : f.index + 1, res.fingerprint);
      yield Object.freeze(item);
    }
  }

  #resynced(res: SubscribeEventsResponse, r: Gap | ResyncRequired, inline: boolean): ResyncedSignal {
    const previousEpoch = this.#cursor.epoch;
    // Discard the cursor: what follows is a snapshot of this instance.
    this.#cursor = ZERO_CURSOR;
    this.#timeSpent = true;
    return Object.freeze({
      kind: "resynced",
      reason: r.reason,
      reasonName: reasonName(r.reason),
      requestedSeq: r.requestedSeq,
      oldestSeq: r.oldestSeq,
      headSeq: r.headSeq,
      epoch: res.instanceEpoch,
      previousEpoch,
      inline,
    });
  }

  #request(): SubscribeEventsRequest {
    const o = this.#opts;
    const c = this.#cursor;
    let untilSeq = o.untilSeq ?? 0n;
    if (untilSeq > 0n && untilSeq <= c.seq) {
      // Stopped inside commit untilSeq: ask one further, stop client-side.
      untilSeq = c.seq + 1n;
    }
    return create(SubscribeEventsRequestSchema, {
      sinceSeq: c.seq,
      instanceEpoch: c.epoch,
      sinceFact: c.fact,
      // So that a log that gave c.seq to another commit answers with a
      // resync (reason commit_mismatch).
      sinceFingerprint: c.fingerprint ?? 0,
      topics: [...(o.topics ?? [])],
      snapshot: snapshotValue(o.snapshot),
      onUnservable: onUnservableValue(o.onUnservable),
      untilSeq,
      endAtHead: o.endAtHead ?? false,
      // No position yet: start at the time (sinceTime).
      ...(o.sinceTime !== undefined && c.seq === 0n && !this.#timeSpent ? { sinceTime: timestampFromDate(o.sinceTime) } : {}),
    });
  }

  #boundReached(): boolean {
    const u = this.#opts.untilSeq;
    return u !== undefined && u > 0n && this.#cursor.seq >= u && this.#cursor.fact === 0;
  }

  /**
   * #beyondBound handles a positioned response past the until bound
   * (possible only when resuming inside commit u, which asks until u+1):
   * everything up to u is covered, so the cursor moves to (u, 0).
   */
  #beyondBound(res: SubscribeEventsResponse): boolean {
    const u = this.#opts.untilSeq;
    if (u === undefined || u === 0n || res.seq <= u) {
      return false;
    }
    if (this.#cursor.epoch === res.instanceEpoch && this.#cursor.seq <= u) {
      // Still commit u's fingerprint when the cursor was inside it.
      this.#cursor = cursorAt(res.instanceEpoch, u, 0, this.#cursor.seq === u ? (this.#cursor.fingerprint ?? 0) : 0);
    }
    return true;
  }

  /** #switchedEpoch: a positioned response of another epoch than the (non-zero) cursor's, with no resync before it. */
  #switchedEpoch(res: SubscribeEventsResponse): boolean {
    return this.#cursor.seq !== 0n && res.instanceEpoch !== this.#cursor.epoch;
  }
}

interface AttemptState {
  /** This stream sent CaughtUp. */
  caughtUp: boolean;
  /** This stream moved the cursor to a new position: the backoff starts over. */
  progress: boolean;
  /** The stream ended with ResyncRequired. */
  resync: boolean;
  /** A bound was reached: the iteration ends. */
  ended: boolean;
  /** The stream switched epoch without a resync: drop it and reconnect with the cursor. */
  broken: boolean;
  opened: boolean;
}

/**
 * SubscriptionIterator is the async generator behind a Subscription, with a
 * return() that also ends a next() still waiting for the network or a
 * reconnect (a plain async generator queues return() behind it).
 */
class SubscriptionIterator implements AsyncIterator<StreamItem, void, undefined> {
  #pending = 0;
  #done = false;

  constructor(
    private readonly gen: AsyncGenerator<StreamItem, void, undefined>,
    private readonly stop: AbortController,
    private readonly release: () => void,
  ) {}

  async next(): Promise<IteratorResult<StreamItem, void>> {
    if (this.#done) {
      return { done: true, value: undefined };
    }
    this.#pending++;
    try {
      const r = await this.gen.next();
      if (r.done) {
        this.#finish();
      }
      return r;
    } catch (e) {
      this.#finish();
      if (e === STOPPED) {
        return { done: true, value: undefined };
      }
      throw e;
    } finally {
      this.#pending--;
    }
  }

  async return(): Promise<IteratorResult<StreamItem, void>> {
    if (this.#pending > 0 && !this.stop.signal.aborted) {
      this.stop.abort(STOPPED);
    }
    this.#finish();
    try {
      await this.gen.return(undefined);
    } catch (e) {
      if (e !== STOPPED) throw e;
    }
    return { done: true, value: undefined };
  }

  /** Iterable itself, like the async generator it wraps. */
  [Symbol.asyncIterator](): this {
    return this;
  }

  async throw(e?: unknown): Promise<IteratorResult<StreamItem, void>> {
    this.#finish();
    return this.gen.throw(e);
  }

  #finish(): void {
    this.#done = true;
    this.release();
  }
}

/** Watchdog calls fire when armed for longer than ms without a disarm. */
class Watchdog {
  #timer: ReturnType<typeof setTimeout> | undefined;
  constructor(private readonly fire: () => void) {}
  /** arm (re)starts the countdown; a negative ms leaves it off. */
  arm(ms: number): void {
    this.disarm();
    if (ms >= 0) {
      this.#timer = setTimeout(this.fire, ms);
    }
  }
  disarm(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}
