import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { CursorError, ZERO_CURSOR, backoffDelay, formatCursor, parseCursor, resolveBackoff } from "../src/index.js";

describe("cursor", () => {
  it("keeps 64-bit values above 2^53 exact through its string form", () => {
    const max = (1n << 64n) - 1n;
    for (const c of [
      { epoch: max, seq: max, fact: 2 ** 32 - 1 },
      { epoch: (1n << 53n) + 1n, seq: (1n << 53n) + 3n, fact: 0 },
      { epoch: 0xfedcba9876543211n, seq: 9007199254740993n, fact: 7 },
    ]) {
      const s = formatCursor(c);
      const back = parseCursor(s);
      assert.equal(back.epoch, c.epoch);
      assert.equal(back.seq, c.seq);
      assert.equal(back.fact, c.fact);
      assert.equal(formatCursor(back), s);
      // A path through Number would have changed it.
      assert.notEqual(BigInt(Number(c.seq)), c.seq);
    }
    assert.equal(formatCursor({ epoch: 18446744073709551615n, seq: 9007199254740993n, fact: 1 }), "v1.18446744073709551615.9007199254740993.1");
  });

  it("formats the zero cursor", () => {
    assert.equal(formatCursor(ZERO_CURSOR), "v1.0.0.0");
    assert.deepEqual(parseCursor("v1.0.0.0"), { epoch: 0n, seq: 0n, fact: 0 });
  });

  it("parses strictly", () => {
    for (const bad of [
      "",
      "v1",
      "v1.1.2",
      "v1.1.2.3.4",
      "v2.1.2.3",
      "V1.1.2.3",
      " v1.1.2.3",
      "v1.1.2.3\n",
      "v1.01.2.3",
      "v1.1.-2.3",
      "v1.1.+2.3",
      "v1.1.2.0x3",
      "v1.1.2.3e0",
      "v1.18446744073709551616.1.0", // epoch > 2^64-1
      "v1.1.18446744073709551616.0", // seq > 2^64-1
      "v1.1.1.4294967296", // fact > 2^32-1
      "v1.0.5.0", // seq without epoch
      "v1.7.0.1", // fact without seq
      "v1.1.2.3 ",
      "v1..2.3",
    ]) {
      assert.throws(() => parseCursor(bad), CursorError, JSON.stringify(bad));
    }
  });

  it("refuses to format malformed cursors", () => {
    assert.throws(() => formatCursor({ epoch: -1n, seq: 0n, fact: 0 }), CursorError);
    assert.throws(() => formatCursor({ epoch: 1n << 64n, seq: 0n, fact: 0 }), CursorError);
    assert.throws(() => formatCursor({ epoch: 1n, seq: 1n, fact: 1.5 }), CursorError);
    assert.throws(() => formatCursor({ epoch: 1n, seq: 1 as unknown as bigint, fact: 0 }), CursorError);
  });
});

describe("backoff", () => {
  it("stays within [min, min(max, initial·2^n)] and never below the floor", () => {
    const b = resolveBackoff({ minMs: 50, initialMs: 100, maxMs: 1000 });
    for (let n = 0; n < 50; n++) {
      const ceiling = Math.min(1000, 100 * 2 ** n);
      assert.equal(backoffDelay(b, n, () => 0), 50);
      assert.equal(backoffDelay(b, n, () => 0.999999), 50 + 0.999999 * (ceiling - 50));
    }
  });

  it("has a non-zero floor even when asked for zero", () => {
    const b = resolveBackoff({ minMs: 0, initialMs: 0, maxMs: 0 });
    assert.ok(b.minMs >= 1);
    assert.ok(backoffDelay(b, 0, () => 0) >= 1);
  });
});
