/**
 * @ringcast/client: subscribe to a ringcast server from browsers and Node,
 * over any Connect transport, without losing or repeating a fact across
 * disconnects, restarts, lease ends and lag.
 *
 * ```ts
 * import { createGrpcWebTransport } from "@connectrpc/connect-web";
 * import { subscribe } from "@ringcast/client";
 *
 * const sub = subscribe(createGrpcWebTransport({ baseUrl: "http://127.0.0.1:8080" }), {
 *   cursor: localStorage.getItem("cursor") ?? undefined,
 * });
 * for await (const item of sub) {
 *   if (item.kind === "fact") apply(item);
 *   localStorage.setItem("cursor", sub.cursorString());
 * }
 * ```
 *
 * @module
 */
export { subscribe, Subscription, PERMANENT_CODES, isTokenExpired, TOKEN_EXPIRED_MESSAGE } from "./subscribe.js";
export type { SubscribeOptions, ConnectionEvent } from "./subscribe.js";
export { publish, publishBatch, isKeyReused } from "./publish.js";
export type { CommitInit, PublishOptions } from "./publish.js";
export { outcome } from "./outcome.js";
export type { PublishOutcome } from "./outcome.js";
export type { StreamItem, FactItem, CaughtUpSignal, ResyncedSignal } from "./items.js";
export { reasonName } from "./names.js";
export type { OnUnservableName, SnapshotName } from "./names.js";
export {
  CURSOR_FORMAT_VERSION,
  CURSOR_FORMAT_VERSION_FINGERPRINT,
  CursorError,
  ZERO_CURSOR,
  checkCursor,
  cursorAt,
  formatCursor,
  formatEpoch,
  parseCursor,
} from "./cursor.js";
export type { Cursor } from "./cursor.js";
export { DEFAULT_BACKOFF, backoffDelay, resolveBackoff } from "./backoff.js";
export type { BackoffOptions } from "./backoff.js";
// Everything generated from ringcast.proto: the EventService descriptor, the
// message types (Fact, Commit, PublishRequest, ServerStatus, …), their
// schemas for @bufbuild/protobuf's create/toJson/fromBinary (FactSchema,
// CommitSchema, …) and the enums, so that a consumer imports them from the
// package rather than from its internals.
export * from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
