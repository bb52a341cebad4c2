/**
 * The cursor: the position of what the APPLICATION has consumed, as
 * `(epoch, seq, fact)`.
 *
 * - `fact = 0`: commit `seq` (and everything before it) is fully consumed.
 * - `fact = K > 0`: the facts of commit `seq` with index < K are consumed;
 *   a resume delivers the rest of that commit first.
 * - `seq = 0`: nothing of this epoch is consumed; a subscribe starts with a
 *   snapshot. (`epoch` may still name the instance it was minted by.)
 *
 * 64-bit values are `bigint`s, never `number`s, so epochs and seqs above
 * 2^53 survive. The string form is the one the Go client and
 * `ringcast tail --cursor-file` use: `rc1.<epoch>.<seq>.<fact>`, with the
 * epoch as exactly 16 lower-case hex digits (as the server logs it) and seq
 * and fact in canonical decimal (no sign, no leading zeros), e.g.
 * `rc1.9f86d081884c7d65.1042.3`. `rc1` is the format version.
 */
export interface Cursor {
  /** The server instance's epoch (fixed64) the position belongs to. */
  readonly epoch: bigint;
  /** The last fully or partly consumed position (uint64). */
  readonly seq: bigint;
  /** Facts of commit `seq` consumed so far; 0 = the whole commit (uint32). */
  readonly fact: number;
}

/** The format version written by {@link formatCursor}. */
export const CURSOR_FORMAT_VERSION = 1;

/** The cursor of a subscriber that has consumed nothing. */
export const ZERO_CURSOR: Cursor = Object.freeze({ epoch: 0n, seq: 0n, fact: 0 });

const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 2 ** 32 - 1;
const CURSOR_RE = /^rc1\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,9})$/;

/** Error thrown by {@link parseCursor} and {@link checkCursor}. */
export class CursorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CursorError";
  }
}

/**
 * checkCursor throws a CursorError unless c is a well-formed cursor:
 * epoch and seq within uint64, fact within uint32, a fact offset only with
 * a seq, and a seq only with an epoch.
 */
export function checkCursor(c: Cursor): Cursor {
  if (typeof c !== "object" || c === null) {
    throw new CursorError("cursor: not an object");
  }
  if (typeof c.epoch !== "bigint" || c.epoch < 0n || c.epoch > U64_MAX) {
    throw new CursorError("cursor: epoch must be a bigint in [0, 2^64)");
  }
  if (typeof c.seq !== "bigint" || c.seq < 0n || c.seq > U64_MAX) {
    throw new CursorError("cursor: seq must be a bigint in [0, 2^64)");
  }
  if (!Number.isInteger(c.fact) || c.fact < 0 || c.fact > U32_MAX) {
    throw new CursorError("cursor: fact must be an integer in [0, 2^32)");
  }
  if (c.fact > 0 && c.seq === 0n) {
    throw new CursorError("cursor: a fact offset requires a seq");
  }
  if (c.seq > 0n && c.epoch === 0n) {
    throw new CursorError("cursor: a seq requires an epoch");
  }
  return c;
}

/** formatCursor returns the cursor's string form, `rc1.<epoch hex>.<seq>.<fact>`. */
export function formatCursor(c: Cursor): string {
  checkCursor(c);
  return `rc${CURSOR_FORMAT_VERSION}.${formatEpoch(c.epoch)}.${c.seq.toString()}.${c.fact.toString()}`;
}

/**
 * parseCursor is the strict inverse of {@link formatCursor}: it accepts
 * exactly the strings formatCursor produces and throws a CursorError for
 * anything else (other versions, signs, leading zeros, whitespace, values
 * out of range).
 */
export function parseCursor(s: string): Cursor {
  if (typeof s !== "string") {
    throw new CursorError("cursor: not a string");
  }
  const m = CURSOR_RE.exec(s);
  if (m === null) {
    throw new CursorError(`cursor: malformed ${JSON.stringify(s.length > 64 ? s.slice(0, 64) + "…" : s)} (want rc1.<16 hex epoch>.<seq>.<fact>)`);
  }
  const c: Cursor = { epoch: BigInt("0x" + m[1]!), seq: BigInt(m[2]!), fact: Number(m[3]!) };
  return Object.freeze(checkCursor(c));
}

/** formatEpoch renders an epoch as the 16 lower-case hex digits the server logs. */
export function formatEpoch(epoch: bigint): string {
  return epoch.toString(16).padStart(16, "0");
}
