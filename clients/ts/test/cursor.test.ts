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
    assert.equal(formatCursor({ epoch: 18446744073709551615n, seq: 9007199254740993n, fact: 1 }), "rc1.ffffffffffffffff.9007199254740993.1");
    assert.deepEqual(parseCursor("rc1.9f86d081884c7d65.18446744073709551615.3"), { epoch: 0x9f86d081884c7d65n, seq: 18446744073709551615n, fact: 3 });
  });

  it("formats the zero cursor", () => {
    assert.equal(formatCursor(ZERO_CURSOR), "rc1.0000000000000000.0.0");
    assert.deepEqual(parseCursor("rc1.0000000000000000.0.0"), { epoch: 0n, seq: 0n, fact: 0 });
    // The format the Go client writes (and `ringcast tail --cursor-file` reads).
    assert.equal(formatCursor({ epoch: 0x9f86d081884c7d65n, seq: 1042n, fact: 3 }), "rc1.9f86d081884c7d65.1042.3");
  });

  it("writes a cursor with a fingerprint as rc2, one without as rc1", () => {
    const c = { epoch: 0x9f86d081884c7d65n, seq: 1042n, fact: 3, fingerprint: 0x5d41402a };
    assert.equal(formatCursor(c), "rc2.9f86d081884c7d65.1042.3.5d41402a");
    assert.deepEqual(parseCursor("rc2.9f86d081884c7d65.1042.3.5d41402a"), c);
    assert.equal(formatCursor({ epoch: 1n, seq: 2n, fact: 0, fingerprint: 1 }), "rc2.0000000000000001.2.0.00000001");
    assert.equal(formatCursor({ epoch: 1n, seq: 2n, fact: 0, fingerprint: 0 }), "rc1.0000000000000001.2.0");
    for (const s of [
      "rc2.9f86d081884c7d65.1042.3",
      "rc2.9f86d081884c7d65.1042.3.00000000",
      "rc2.9f86d081884c7d65.1042.3.5D41402A",
      "rc2.9f86d081884c7d65.1042.3.5d41402",
      "rc2.9f86d081884c7d65.1042.3.05d41402a",
      "rc1.9f86d081884c7d65.1042.3.5d41402a",
      "rc2.0000000000000000.0.0.5d41402a",
    ]) {
      assert.throws(() => parseCursor(s), CursorError, s);
    }
  });

  it("parses strictly", () => {
    const E = "9f86d081884c7d65";
    for (const bad of [
      "",
      "rc1",
      `rc1.${E}.2`,
      `rc1.${E}.2.3.4`,
      `rc2.${E}.2.3`,
      `v1.${E}.2.3`,
      `RC1.${E}.2.3`,
      ` rc1.${E}.2.3`,
      `rc1.${E}.2.3\n`,
      `rc1.${E}.2.3 `,
      "rc1.9F86D081884C7D65.2.3", // upper-case hex
      "rc1.9f86d081884c7d6.2.3", // 15 hex digits
      "rc1.09f86d081884c7d65.2.3", // 17 hex digits
      "rc1.11068046444225730969.2.3", // decimal epoch
      `rc1.${E}.02.3`,
      `rc1.${E}.-2.3`,
      `rc1.${E}.+2.3`,
      `rc1.${E}.2.0x3`,
      `rc1.${E}.2.3e0`,
      `rc1.${E}.18446744073709551616.0`, // seq > 2^64-1
      `rc1.${E}.1.4294967296`, // fact > 2^32-1
      "rc1.0000000000000000.5.0", // seq without epoch
      `rc1.${E}.0.1`, // fact without seq
      `rc1..2.3`,
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

  it("honours a cap below the initial delay and the floor", () => {
    const b = resolveBackoff({ minMs: 200, initialMs: 500, maxMs: 150 });
    assert.deepEqual([b.minMs, b.initialMs, b.maxMs], [150, 150, 150]);
    for (let n = 0; n < 5; n++) {
      assert.ok(backoffDelay(b, n, () => 0.999999) <= 150, "no delay above maxMs");
    }
    const low = resolveBackoff({ initialMs: 250, maxMs: 100 });
    assert.equal(low.maxMs, 100);
    assert.equal(low.initialMs, 100);
    assert.equal(low.minMs, 100);
    assert.ok(backoffDelay(low, 3, () => 0.5) <= 100);
  });
});
