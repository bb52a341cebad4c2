// Reconnect pacing against a server that ends every stream at once with an
// empty OK end-of-stream: the client must keep retrying, never in a
// zero-delay loop, with growing, capped, jittered delays.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";

import { createConnectTransport } from "@connectrpc/connect-node";

import { subscribe, type ConnectionEvent } from "../src/index.js";
import { withTimeout } from "./harness.js";

describe("backoff against a server that ends streams at once", () => {
  let server: Server;
  let baseUrl: string;
  const attempts: number[] = [];
  before(async () => {
    server = createServer((req, res) => {
      if (req.method === "POST" && req.url === "/ringcast.v1.EventService/SubscribeEvents") {
        attempts.push(performance.now());
        req.resume();
        req.on("end", () => {
          // Connect streaming: one end-of-stream envelope (flag 0x02) holding "{}" = OK.
          const body = Buffer.from([0x02, 0, 0, 0, 2, 0x7b, 0x7d]);
          res.writeHead(200, { "content-type": "application/connect+proto", "content-length": body.length });
          res.end(body);
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("retries with capped exponential full-jitter delays above the floor", async () => {
    const backoff = { minMs: 40, initialMs: 80, maxMs: 320 };
    const conn: ConnectionEvent[] = [];
    const ac = new AbortController();
    const sub = subscribe(createConnectTransport({ baseUrl, httpVersion: "1.1" }), {
      backoff,
      signal: ac.signal,
      onConnection: (e) => conn.push(e),
    });
    const windowMs = 2_500;
    const iterating = sub[Symbol.asyncIterator]().next();
    setTimeout(() => ac.abort(), windowMs);
    const t0 = performance.now();
    await assert.rejects(withTimeout(iterating, windowMs + 2_000, "abort"), (e: unknown) => e instanceof Error && e.name === "AbortError");
    assert.ok(performance.now() - t0 < windowMs + 500, "abort during backoff is prompt");

    const n = attempts.length;
    // A zero-delay loop would make thousands of attempts; the floor alone allows windowMs/minMs.
    assert.ok(n >= 4, `expected retries to continue, got ${n} attempts`);
    assert.ok(n <= windowMs / backoff.minMs, `too many attempts: ${n}`);
    // Expected delays: 40..80, 40..160, 40..320, then 40..320 (mean 180): about 12 attempts in 2.5 s.
    assert.ok(n <= 30, `delays do not grow: ${n} attempts in ${windowMs} ms`);
    for (let i = 1; i < n; i++) {
      const gap = attempts[i]! - attempts[i - 1]!;
      assert.ok(gap >= backoff.minMs - 5, `attempt ${i} came ${gap.toFixed(1)} ms after the previous one`);
    }
    const waits = conn.filter((e) => e.state === "reconnecting");
    assert.ok(waits.length >= n - 1);
    waits.forEach((e, i) => {
      assert.ok(e.state === "reconnecting");
      assert.equal(e.attempt, i, "an empty stream is not healthy: attempts accumulate");
      const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** i);
      assert.ok(e.delayMs >= backoff.minMs && e.delayMs <= ceiling, `delay ${e.delayMs} outside [${backoff.minMs}, ${ceiling}]`);
      assert.equal(e.error, undefined, "the streams ended OK");
    });
    // Full jitter: the capped delays are not all the same.
    const capped = waits.slice(3).map((e) => (e.state === "reconnecting" ? e.delayMs : 0));
    assert.ok(new Set(capped).size > 1, "delays are jittered");
  });
});
