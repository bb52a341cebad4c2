// Subscription.reconnectNow against a real server: it cuts the reconnect
// delay short, and does nothing when no delay is being waited out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { subscribe, type ConnectionEvent } from "../src/index.js";
import { protocols, startServer, transportFor, withTimeout } from "./harness.js";

// Ten minutes: only reconnectNow can bring the next attempt within the test's hang guards.
const slowBackoff = { minMs: 600_000, initialMs: 600_000, maxMs: 600_000 };

describe("reconnectNow", () => {
  for (const protocol of protocols) {
    it(`starts the next attempt at once instead of after the delay, over ${protocol}`, async () => {
      let srv = await startServer(["--demo=false"]);
      const { transport, close } = transportFor(protocol, srv.url);
      const ac = new AbortController();
      try {
        let waiting: () => void = () => {};
        const inDelay = new Promise<void>((r) => (waiting = r));
        const conn: ConnectionEvent[] = [];
        const sub = subscribe(transport, {
          backoff: slowBackoff,
          signal: ac.signal,
          onConnection: (e) => {
            conn.push(e);
            if (e.state === "reconnecting") waiting();
          },
        });
        const it = sub[Symbol.asyncIterator]();
        const first = await withTimeout(it.next(), 10_000, "caught_up");
        assert.equal(first.value?.kind, "caught_up");
        assert.equal(sub.reconnectNow(), false, "nothing to cut short while the stream is open");

        const pending = it.next();
        const oldEpoch = srv.epoch;
        srv = await srv.restart();
        await withTimeout(inDelay, 10_000, "the stream to end and the reconnect delay to start");
        const delay = conn.find((e) => e.state === "reconnecting");
        assert.ok(delay?.state === "reconnecting" && delay.delayMs >= 600_000, "the delay is the slow one");
        assert.equal(sub.reconnectNow(), true, "a delay was cut short");
        assert.equal(sub.reconnectNow(), false, "only once");

        const r = await withTimeout(pending, 10_000, "the resync after reconnecting now");
        assert.equal(r.value?.kind, "resynced");
        assert.ok(r.value?.kind === "resynced" && r.value.previousEpoch === oldEpoch && r.value.epoch === srv.epoch);
        assert.equal(conn.filter((e) => e.state === "connecting").length, 2, "one reconnect");
      } finally {
        ac.abort();
        close();
        await srv.stop();
      }
    });
  }
});
