import type { JsonObject } from "@bufbuild/protobuf";

import type { Reason } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";

/**
 * One fact of a commit, as this stream delivers it. Facts of a commit come
 * in index order; `last` marks the last one this stream delivers for the
 * commit (with a topic filter, fewer than `factCount` facts may come).
 */
export interface FactItem {
  readonly kind: "fact";
  /** The epoch of the instance that assigned `seq`. */
  readonly epoch: bigint;
  /** The commit's position. */
  readonly seq: bigint;
  /** The fact's position in the original commit (0-based). */
  readonly index: number;
  /** True on the commit's last fact as this stream delivers it. */
  readonly last: boolean;
  /** Number of facts in the original commit. */
  readonly factCount: number;
  readonly topic: string;
  readonly type: string;
  /** The entity key ("" when none). */
  readonly key: string;
  /** Structured payload, when the fact carries one. */
  readonly data?: JsonObject;
  /** Opaque payload, when the fact carries one (see contentType). */
  readonly binaryData?: Uint8Array;
  readonly contentType: string;
  /**
   * The W3C trace context (`traceparent`) of the publish that made this
   * commit, when the producer sent one: extract it to continue the
   * producer's trace.
   */
  readonly traceparent?: string;
  /** The commit time. */
  readonly eventTime?: Date;
}

/** The replay or snapshot is done: what follows is live. */
export interface CaughtUpSignal {
  readonly kind: "caught_up";
  readonly epoch: bigint;
  /** The position the stream had covered when it caught up. */
  readonly headSeq: bigint;
  /**
   * After a latest_per_key snapshot: how many keys the server's
   * latest-per-key table had evicted since boot. 0n: the snapshot held every
   * key ever published; more: keys not updated for the longest time may be
   * missing from it.
   */
  readonly snapshotEvictedKeys: bigint;
}

/**
 * The server could not serve the cursor: what was missed is gone. The
 * cursor has been discarded and the facts that follow (until the next
 * "caught_up") are a fresh snapshot of the server's state, not a replay.
 * Always delivered BEFORE the first snapshot fact.
 */
export interface ResyncedSignal {
  readonly kind: "resynced";
  readonly reason: Reason;
  /** The reason's short name, e.g. "EPOCH_MISMATCH", "CURSOR_TOO_OLD" ({@link reasonName}). */
  readonly reasonName: string;
  /** The seq the stream asked to resume after (or, when lagging, the next seq it needed). */
  readonly requestedSeq: bigint;
  /** The oldest seq the server still held when it decided. */
  readonly oldestSeq: bigint;
  /** The server's head seq when it decided. */
  readonly headSeq: bigint;
  /** The epoch of the running instance (new positions belong to it). */
  readonly epoch: bigint;
  /** The epoch of the discarded cursor. */
  readonly previousEpoch: bigint;
  /** True when the snapshot follows on the same stream (a Gap), false after ResyncRequired. */
  readonly inline: boolean;
}

/** What a subscription yields. */
export type StreamItem = FactItem | CaughtUpSignal | ResyncedSignal;
