// Reading what became of a publish: GetPublishOutcome, a read without side effects.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type CallOptions, type Transport } from "@connectrpc/connect";

import { EventService, type PublishResponse } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";

/** What became of a publish with an idempotency key (see {@link outcome}). */
export interface PublishOutcome {
  /** A commit with the key was appended. */
  readonly applied: boolean;
  /** That commit's original receipt (seq, instanceEpoch, eventTime; duplicate false), when applied. */
  readonly receipt?: PublishResponse;
  /**
   * Since when the server remembers keys (its dedupe window, or the start
   * of what its store holds, whichever is later). `applied: false` promises
   * only that no commit with the key was appended at or after this time.
   * Undefined when the server did not say.
   */
  readonly rememberedSince?: Date;
}

/**
 * outcome reads what became of the publish sent with `idempotencyKey`,
 * without writing (GetPublishOutcome, NO_SIDE_EFFECTS): applied with the
 * original receipt, or not applied at or after `rememberedSince`. An empty
 * key rejects with an InvalidArgument ConnectError without a request. Under
 * `--auth jwt` the call needs a token (pass `headers`); a token that may not
 * subscribe to every topic of the commit gets the answer for an unknown key
 * (not applied), never the receipt.
 */
export async function outcome(transport: Transport, idempotencyKey: string, options?: CallOptions): Promise<PublishOutcome> {
  if (idempotencyKey === "") {
    throw new ConnectError("an outcome is read by an idempotency key; the key is empty", Code.InvalidArgument);
  }
  const res = await createClient(EventService, transport).getPublishOutcome({ idempotencyKey }, options);
  return Object.freeze({
    applied: res.applied,
    ...(res.applied && res.receipt ? { receipt: res.receipt } : {}),
    ...(res.rememberedSince ? { rememberedSince: timestampDate(res.rememberedSince) } : {}),
  });
}
