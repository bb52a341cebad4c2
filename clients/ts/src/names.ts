/**
 * The names of the proto's enum values in this client, all read from the
 * generated enums (gen/ts), whose keys are the proto names without the
 * enum's prefix (REASON_EPOCH_MISMATCH is `Reason.EPOCH_MISMATCH`):
 *
 * - a reason's name ({@link reasonName}) is that key: "EPOCH_MISMATCH";
 * - an option's name (`snapshot`, `onUnservable`) is that key in lower
 *   case: "latest_per_key", "snapshot_inline". The server's text names
 *   (server/internal/face/names/names.go: the SSE face's `snapshot`
 *   parameter, its resync comment, `ringcast tail`) follow the same rule,
 *   so its reasons read "epoch_mismatch".
 *
 * test/names.test.ts checks them against the enums' descriptors.
 *
 * @module
 */
import { OnUnservable, Reason, Snapshot } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";

/** The name of every value but the zero value of a generated enum, in lower case. */
type OptionName<E> = Lowercase<Exclude<Extract<keyof E, string>, "UNSPECIFIED">>;

/** A Snapshot by name: "retained" | "latest_per_key". */
export type SnapshotName = OptionName<typeof Snapshot>;

/** An OnUnservable by name: "resync_terminal" | "snapshot_inline". */
export type OnUnservableName = OptionName<typeof OnUnservable>;

/** reasonName returns "EPOCH_MISMATCH" for Reason.EPOCH_MISMATCH, etc. */
export function reasonName(r: Reason): string {
  return Reason[r] ?? `REASON_${String(r)}`;
}

/** The Snapshot an application chose; unset sends UNSPECIFIED (the server's default, RETAINED), as the Go client does. */
export function snapshotValue(s: SnapshotName | Snapshot | undefined): Snapshot {
  return optionValue<Snapshot>(Snapshot, s);
}

/** The OnUnservable an application chose; unset sends UNSPECIFIED (the server's default, RESYNC_TERMINAL), as the Go client does. */
export function onUnservableValue(s: OnUnservableName | OnUnservable | undefined): OnUnservable {
  return optionValue<OnUnservable>(OnUnservable, s);
}

/**
 * optionValue reads an option given by value or by name (the lower-case
 * key of a value of `e` other than the zero value). Anything else passes
 * through unchanged, and the request's encoding rejects it.
 */
function optionValue<V extends number>(e: Readonly<Record<string, string | number>>, s: string | V | undefined): V {
  if (s === undefined) {
    return 0 as V;
  }
  if (typeof s === "string" && s === s.toLowerCase() && s !== "unspecified") {
    const v = e[s.toUpperCase()];
    if (typeof v === "number") {
      return v as V;
    }
  }
  return s as V;
}
