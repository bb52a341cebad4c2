/**
 * The cursor: the position of what the APPLICATION has consumed, as
 * `(epoch, seq, fact)`, with the fingerprint of the commit at `seq`.
 *
 * - `fact = 0`: commit `seq` (and everything before it) is fully consumed.
 * - `fact = K > 0`: the facts of commit `seq` with index < K are consumed;
 *   a resume delivers the rest of that commit first.
 * - `seq = 0`: nothing of this epoch is consumed; a subscribe starts with a
 *   snapshot. (`epoch` may still name the instance it was minted by.)
 *
 * - `fingerprint` (uint32, absent or 0 = none): the fingerprint of the
 *   positioned response that moved the cursor to `seq`, which names the
 *   commit there. A server whose log holds another commit at `seq` under
 *   the same epoch (a restored or replaced store) answers with a resync
 *   (reason `commit_mismatch`) instead of carrying the cursor onto other
 *   commits. A cursor without one is served by its epoch and seq alone.
 *
 * 64-bit values are `bigint`s, never `number`s, so epochs and seqs above
 * 2^53 survive. The string form is the one the Go client and
 * `ringcast tail --cursor-file` use: `rc2.<epoch>.<seq>.<fact>.<fingerprint>`
 * with a fingerprint, `rc1.<epoch>.<seq>.<fact>` without one; the epoch as
 * exactly 16 lower-case hex digits (as the server logs it), the fingerprint
 * as exactly 8 (not all zero), seq and fact in canonical decimal (no sign,
 * no leading zeros), e.g. `rc2.9f86d081884c7d65.1042.3.5d41402a` or
 * `rc1.9f86d081884c7d65.1042.3`. `rc1`/`rc2` is the format version.
 */
export interface Cursor {
  /** The server instance's epoch (fixed64) the position belongs to. */
  readonly epoch: bigint;
  /** The last fully or partly consumed position (uint64). */
  readonly seq: bigint;
  /** Facts of commit `seq` consumed so far; 0 = the whole commit (uint32). */
  readonly fact: number;
  /** The fingerprint of the commit at `seq` (uint32); absent or 0 = none. */
  readonly fingerprint?: number;
}

/** The format version written by {@link formatCursor} for a cursor without a fingerprint. */
export const CURSOR_FORMAT_VERSION = 1;

/** The format version written by {@link formatCursor} for a cursor with a fingerprint. */
export const CURSOR_FORMAT_VERSION_FINGERPRINT = 2;

/** The cursor of a subscriber that has consumed nothing. */
export const ZERO_CURSOR: Cursor = Object.freeze({ epoch: 0n, seq: 0n, fact: 0 });

const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 2 ** 32 - 1;
const CURSOR_RE = /^rc1\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,9})$/;
const CURSOR_FP_RE = /^rc2\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,9})\.([0-9a-f]{8})$/;

/**
 * cursorAt is the cursor (epoch, seq, fact) with fingerprint fp, the
 * fingerprint left out when it is 0 (none).
 */
export function cursorAt(epoch: bigint, seq: bigint, fact: number, fp: number): Cursor {
  return Object.freeze(fp !== 0 ? { epoch, seq, fact, fingerprint: fp } : { epoch, seq, fact });
}

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
  const fp = c.fingerprint ?? 0;
  if (!Number.isInteger(fp) || fp < 0 || fp > U32_MAX) {
    throw new CursorError("cursor: fingerprint must be an integer in [0, 2^32)");
  }
  if (fp > 0 && c.seq === 0n) {
    throw new CursorError("cursor: a fingerprint requires a seq");
  }
  return c;
}

/**
 * formatCursor returns the cursor's string form,
 * `rc2.<epoch hex>.<seq>.<fact>.<fingerprint hex>`, or
 * `rc1.<epoch hex>.<seq>.<fact>` when it has no fingerprint.
 */
export function formatCursor(c: Cursor): string {
  checkCursor(c);
  const fp = c.fingerprint ?? 0;
  const base = `${formatEpoch(c.epoch)}.${c.seq.toString()}.${c.fact.toString()}`;
  if (fp !== 0) {
    return `rc${CURSOR_FORMAT_VERSION_FINGERPRINT}.${base}.${fp.toString(16).padStart(8, "0")}`;
  }
  return `rc${CURSOR_FORMAT_VERSION}.${base}`;
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
  const m = CURSOR_RE.exec(s) ?? CURSOR_FP_RE.exec(s);
  const fp = m?.[4] !== undefined ? parseInt(m[4], 16) : 0;
  if (m === null || (m[4] !== undefined && fp === 0)) {
    throw new CursorError(
      `cursor: malformed ${JSON.stringify(s.length > 64 ? s.slice(0, 64) + "…" : s)} (want rc2.<16 hex epoch>.<seq>.<fact>.<8 hex fingerprint, not 0> or rc1.<16 hex epoch>.<seq>.<fact>)`,
    );
  }
  return checkCursor(cursorAt(BigInt("0x" + m[1]!), BigInt(m[2]!), Number(m[3]!), fp));
}

/** formatEpoch renders an epoch as the 16 lower-case hex digits the server logs. */
export function formatEpoch(epoch: bigint): string {
  return epoch.toString(16).padStart(16, "0");
}
