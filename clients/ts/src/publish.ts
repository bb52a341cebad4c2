// Publishing commits: PublishBatch, several commits in one request.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type CallOptions, type Transport } from "@connectrpc/connect";

import { EventService, type PublishRequestSchema, type PublishResponse } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { backoffDelay, resolveBackoff, retryAfterMs, sleep, type BackoffOptions } from "./backoff.js";
import { SHARED_DEFAULTS } from "./defaults_gen.js";
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
 */
export async function publish(transport: Transport, facts: CommitInit["facts"], options: PublishOptions = {}): Promise<PublishResponse> {
  const key = options.idempotencyKey ?? randomKey();
  const attempts = Math.max(1, Math.floor(options.attempts ?? PUBLISH.attempts));
  const backoff = resolveBackoff(options.backoff);
  let last: ConnectError | undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) {
      await sleep(Math.max(backoffDelay(backoff, attempt - 1), retryAfterMs(last)), options.signal);
    }
    options.signal?.throwIfAborted();
    try {
      const call: CallOptions = {};
      if (options.signal) call.signal = options.signal;
      if (options.headers) call.headers = options.headers;
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

/** randomKey is a random idempotency key: "rc-" and 32 hex digits (128 bits), as the Go client makes them. */
function randomKey(): string {
  const b = new Uint8Array(PUBLISH.idempotencyKeyRandomBytes);
  globalThis.crypto.getRandomValues(b);
  return PUBLISH.idempotencyKeyPrefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
