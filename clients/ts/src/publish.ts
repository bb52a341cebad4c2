// Publishing commits: PublishBatch, several commits in one request.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type CallOptions, type Transport } from "@connectrpc/connect";

import { EventService, type PublishRequestSchema, type PublishResponse } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { backoffDelay, resolveBackoff, retryAfterMs, sleep, type BackoffOptions } from "./backoff.js";
import { SHARED_DEFAULTS } from "./defaults_gen.js";
import { outcome, type PublishOutcome } from "./outcome.js";
import { PERMANENT_CODES } from "./subscribe.js";

/** How publish() retries and the keys it makes, shared with the Go client (clients/conformance/defaults.json). */
const PUBLISH = SHARED_DEFAULTS.publish;

/** CommitInit is one commit to publish: its facts and an optional idempotency key. */
export type CommitInit = MessageInitShape<typeof PublishRequestSchema>;

/**
 * publishBatch appends commits in one PublishBatch request, in order, and
 * resolves to one receipt per commit, in the same order. Each commit is
 * validated and deduplicated (by its idempotencyKey) on its own; the server
 * checks every commit first and appends all of them or, on any error, none
 * (the promise rejects with a ConnectError, e.g. InvalidArgument with the
 * violations in its details, or Unavailable while the server drains).
 */
export async function publishBatch(transport: Transport, commits: CommitInit[], options?: CallOptions): Promise<PublishResponse[]> {
  const res = await createClient(EventService, transport).publishBatch({ commits }, options);
  return res.receipts;
}

/** Options of {@link publish}. */
export interface PublishOptions {
  /**
   * The commit's idempotency key (1..128 characters). Default: a random key
   * ("rc-" and 32 hex digits) made once per call, so the call's own retries
   * are safe; pass your own to make retries across restarts safe too.
   */
  idempotencyKey?: string;
  /** How many requests at most (default 5, at least 1). */
  attempts?: number;
  /** The delay between attempts (the subscription's defaults). */
  backoff?: BackoffOptions;
  /** Aborting stops waiting and retrying; the promise rejects with the reason. */
  signal?: AbortSignal;
  /** Headers sent with every attempt (e.g. Authorization). */
  headers?: HeadersInit;
  /**
   * Before each retry, read the commit's outcome by its idempotency key
   * ({@link outcome}, a read without side effects): when the last attempt
   * failed with a transient error (the commit may have been appended, its
   * receipt lost) and the outcome says applied, resolve to that original
   * receipt with `duplicate` set, as a retry would, and publish no more;
   * when it says not applied, or the read fails (an older server answers
   * Unimplemented), retry the publish as usual. Outcome reads do not count
   * against `attempts`. Default false.
   */
  confirmByOutcome?: boolean;
}

/**
 * publish appends one commit of facts and retries it safely: every attempt
 * carries the same idempotency key, so a retry after a lost response (the
 * commit was appended, the receipt never arrived) resolves to the original
 * receipt with `duplicate` set instead of appending again. Transient
 * failures (every code outside PERMANENT_CODES, and network errors) are
 * retried after a backoff delay, up to `attempts` requests; permanent ones
 * reject at once. A thin wrapper over {@link publishBatch} with one commit.
 * The server remembers a key for its dedupe window (10 min by default).
 * A receipt with `duplicate` set means an earlier attempt with the same key
 * appended the commit: it is that commit's original receipt, whether a
 * retried publish returned it or (`confirmByOutcome`) an outcome read did.
 */
export async function publish(transport: Transport, facts: CommitInit["facts"], options: PublishOptions = {}): Promise<PublishResponse> {
  const key = options.idempotencyKey ?? randomKey();
  const attempts = Math.max(1, Math.floor(options.attempts ?? PUBLISH.attempts));
  const backoff = resolveBackoff(options.backoff);
  let last: ConnectError | undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const call: CallOptions = {};
    if (options.signal) call.signal = options.signal;
    if (options.headers) call.headers = options.headers;
    if (attempt > 0) {
      await sleep(Math.max(backoffDelay(backoff, attempt - 1), retryAfterMs(last)), options.signal);
      options.signal?.throwIfAborted();
      if (options.confirmByOutcome) {
        const confirmed = await confirm(transport, key, call);
        if (confirmed) return confirmed;
      }
    }
    options.signal?.throwIfAborted();
    try {
      const [receipt, ...rest] = await publishBatch(transport, [{ facts: facts ?? [], idempotencyKey: key }], call);
      if (receipt === undefined || rest.length > 0) {
        throw new ConnectError(`${rest.length + (receipt ? 1 : 0)} receipts for one commit`, Code.Internal);
      }
      return receipt;
    } catch (e) {
      options.signal?.throwIfAborted();
      last = ConnectError.from(e);
      if (PERMANENT_CODES.has(last.code)) throw last;
    }
  }
  throw last!;
}

/**
 * confirm reads the outcome of the commit with key after a failed attempt:
 * its original receipt marked duplicate when it was applied, undefined when
 * not, or when the read failed (the publish is then retried, which is safe
 * under the same key).
 */
async function confirm(transport: Transport, key: string, call: CallOptions): Promise<PublishResponse | undefined> {
  let o: PublishOutcome;
  try {
    o = await outcome(transport, key, call);
  } catch {
    call.signal?.throwIfAborted();
    return undefined;
  }
  if (!o.applied || o.receipt === undefined) return undefined;
  return { ...o.receipt, duplicate: true };
}

/** randomKey is a random idempotency key: "rc-" and 32 hex digits (128 bits), as the Go client makes them. */
function randomKey(): string {
  const b = new Uint8Array(PUBLISH.idempotencyKeyRandomBytes);
  globalThis.crypto.getRandomValues(b);
  return PUBLISH.idempotencyKeyPrefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * isKeyReused reports whether err is the server's refusal of a publish whose
 * idempotency key its publisher already used, within the dedupe window, for
 * a commit with other facts: code AlreadyExists (docs/protocol.md,
 * "Publish"). It is permanent: publish rejects with it at once. A retry
 * must send the same facts; a new commit needs a new key.
 */
export function isKeyReused(err: unknown): boolean {
  return err instanceof ConnectError && err.code === Code.AlreadyExists;
}
