// The web console's sparkline path (server/internal/ops/console/web/trend.ts), without a
// browser: where the line breaks.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { sparkPath, type Point } from "../../../server/internal/ops/console/web/trend.js";

const x = (t: number) => t / 100;
const y = (v: number) => v;
const moves = (d: string) => d.split("").filter((c) => c === "M").length;

/** readings of one epoch every `every` ms from `from`, seqs from 1. */
const readings = (epoch: string, from: number, n: number, every: number): Point[] =>
  Array.from({ length: n }, (_, i) => ({ t: from + i * every, v: 1 + i / 100, id: `${epoch}:${i + 1}` }));

describe("console sparkline path", () => {
  it("is one line while readings come at their usual pace", () => {
    assert.equal(moves(sparkPath(readings("a", 0, 20, 200), 1000, x, y)), 1);
  });

  it("breaks where readings stop for longer than the gap", () => {
    const pts = [...readings("a", 0, 10, 200), ...readings("a", 1800 + 1200, 10, 200).map((p, i) => ({ ...p, id: `a:${11 + i}` }))];
    assert.equal(moves(sparkPath(pts, 1000, x, y)), 2);
  });

  it("breaks where the epoch changes, however short the pause", () => {
    // A server restarted between two readings as far apart as any others:
    // what was committed in between is unknown, so the line does not join them.
    const pts = [...readings("a", 0, 10, 200), ...readings("b", 2000, 10, 200)];
    const d = sparkPath(pts, 1000, x, y);
    assert.equal(moves(d), 2, d);
    assert.ok(d.startsWith("M0.0 "), d);
    assert.match(d, /L18\.0 [\d.]+M20\.0 /, `the break is between the last reading of one epoch and the first of the next: ${d}`);
  });

  it("keeps one vertex per half unit across, the last reading's, and never merges a break away", () => {
    // Two epochs' readings within one half unit: the break still starts a new vertex.
    const pts: Point[] = [
      { t: 0, v: 1, id: "a:1" },
      { t: 10, v: 2, id: "a:2" },
      { t: 20, v: 3, id: "b:1" },
    ];
    assert.equal(sparkPath(pts, 1000, x, y), "M0.0 2.0M0.0 3.0");
  });
});
