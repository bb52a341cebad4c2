// The TS client against a real ringcast server, on gRPC, gRPC-Web and
// Connect (connect-node transports).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

import { Reason, formatEpoch, publish as publishCommit, subscribe, type ConnectionEvent, type Cursor, type StreamItem } from "../src/index.js";
import { protocols, publish, startServer, transportFor, withTimeout, readUntilEnd, type Server } from "./harness.js";

const fastBackoff = { minMs: 20, initialMs: 50, maxMs: 300 };

/** next reads one item, failing the test when none comes in time. */
async function next(it: AsyncIterator<StreamItem>, what = "next item"): Promise<StreamItem> {
  const r = await withTimeout(it.next(), 10_000, what);
  assert.equal(r.done, false, `stream ended while waiting for ${what}`);
  return r.value as StreamItem;
}

function label(item: StreamItem): string {
  switch (item.kind) {
    case "fact":
      return `${item.seq}/${item.index}${item.last ? "$" : ""}`;
    case "caught_up":
      return "caught_up";
    case "resynced":
      return `resynced:${item.reasonName}`;
  }
}

for (const protocol of protocols) {
  describe(`over ${protocol}`, () => {
    let srv: Server;
    before(async () => {
      srv = await startServer(["--demo=false"]);
    });
    after(async () => {
      await srv.stop();
    });

    it("stops inside a commit and resumes from the next fact, exactly once", async () => {
      const topic = `t/${protocol}`;
      const a = await publish(srv.url, [0, 1, 2].map((i) => ({ topic, type: "x.a", data: { i } })));
      const b = await publish(srv.url, [0, 1].map((i) => ({ topic, type: "x.b", data: { i } })));
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const first = subscribe(transport, { topics: [topic], backoff: fastBackoff });
        const got: string[] = [];
        for await (const item of first) {
          got.push(label(item));
          if (item.kind === "fact" && item.seq === a && item.index === 1) {
            assert.deepEqual(position(first.cursor), { epoch: srv.epoch, seq: a, fact: 2 }, "cursor covers the fact being handed over");
            break;
          }
        }
        assert.deepEqual(got, [`${a}/0`, `${a}/1`]);
        assert.deepEqual(position(first.cursor), { epoch: srv.epoch, seq: a, fact: 2 }, "break keeps the cursor at the next fact");
        const saved = first.cursorString();
        const fp = first.cursor.fingerprint ?? 0;
        assert.ok(fp > 0, "the cursor holds the commit's fingerprint");
        assert.equal(saved, `rc2.${formatEpoch(srv.epoch)}.${a}.2.${fp.toString(16).padStart(8, "0")}`);

        const second = subscribe(transport, { cursor: saved, topics: [topic], backoff: fastBackoff });
        const it2 = second[Symbol.asyncIterator]();
        const rest: string[] = [];
        for (let i = 0; i < 4; i++) {
          rest.push(label(await next(it2)));
        }
        assert.deepEqual(rest, [`${a}/2$`, `${b}/0`, `${b}/1$`, "caught_up"]);
        assert.deepEqual(position(second.cursor), { epoch: srv.epoch, seq: b, fact: 0 });

        const c = await publish(srv.url, [{ topic, type: "x.c", data: { live: true } }]);
        const live = await next(it2, "live fact");
        assert.equal(label(live), `${c}/0$`);
        assert.ok(live.kind === "fact" && live.data?.["live"] === true && live.type === "x.c");
        assert.deepEqual(position(second.cursor), { epoch: srv.epoch, seq: c, fact: 0 });
        await it2.return?.();
      } finally {
        close();
      }
    });

    it("surfaces invalid_argument instead of retrying", async () => {
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const sub = subscribe(transport, { topics: ["Not A Topic"], backoff: fastBackoff });
        await assert.rejects(
          withTimeout(sub[Symbol.asyncIterator]().next(), 5_000, "invalid_argument"),
          (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
        );
      } finally {
        close();
      }
    });

    it("aborts a waiting iteration promptly", async () => {
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const ac = new AbortController();
        const sub = subscribe(transport, { topics: ["nothing/here"], signal: ac.signal, backoff: fastBackoff });
        const it = sub[Symbol.asyncIterator]();
        assert.equal(label(await next(it)), "caught_up");
        const pending = it.next();
        const t0 = performance.now();
        setTimeout(() => ac.abort(), 100);
        await assert.rejects(withTimeout(pending, 2_000, "abort"), (e: unknown) => e instanceof Error && e.name === "AbortError");
        assert.ok(performance.now() - t0 < 1_500, "abort took too long");
      } finally {
        close();
      }
    });
  });

}

// Each of these runs its own server: they run concurrently.
describe("across a server restart", { concurrency: true }, () => {
  for (const protocol of protocols) {
    for (const onUnservable of ["resync_terminal", "snapshot_inline"] as const) {
      it(`signals resynced (${onUnservable}) before the new snapshot, over ${protocol}`, async () => {
        let srv = await startServer(["--demo=false"]);
        const { transport, close } = transportFor(protocol, srv.url);
        try {
          await publish(srv.url, [
            { topic: "gauges/a/k1", type: "gauge.level", key: "k1", data: { v: 1 } },
            { topic: "gauges/a/k2", type: "gauge.level", key: "k2", data: { v: 2 } },
          ]);
          const conn: ConnectionEvent[] = [];
          const sub = subscribe(transport, {
            snapshot: "latest_per_key",
            onUnservable,
            backoff: fastBackoff,
            onConnection: (e) => conn.push(e),
          });
          const it = sub[Symbol.asyncIterator]();
          const before: string[] = [];
          for (;;) {
            const item = await next(it);
            if (item.kind === "caught_up") break;
            if (item.kind === "fact") before.push(item.key);
          }
          assert.deepEqual(before, ["k1", "k2"]);
          const oldEpoch = srv.epoch;
          assert.equal(sub.cursor.epoch, oldEpoch);

          // Restart while the application is not reading; the new instance
          // has state of its own before the client can reach it.
          srv = await srv.restart();
          assert.notEqual(srv.epoch, oldEpoch);
          await publish(srv.url, [{ topic: "gauges/a/k3", type: "gauge.level", key: "k3", data: { v: 3 } }]);

          const afterRestart: StreamItem[] = [];
          for (;;) {
            const item = await next(it, "items after restart");
            afterRestart.push(item);
            if (item.kind === "caught_up") break;
          }
          assert.deepEqual(afterRestart.map(label).map((l) => l.replace(/^\d+\//, "")), ["resynced:EPOCH_MISMATCH", "0$", "caught_up"]);
          const rs = afterRestart[0]!;
          assert.ok(rs.kind === "resynced");
          assert.equal(rs.reason, Reason.EPOCH_MISMATCH);
          assert.equal(rs.previousEpoch, oldEpoch);
          assert.equal(rs.epoch, srv.epoch);
          assert.equal(rs.inline, onUnservable === "snapshot_inline");
          assert.ok(rs.requestedSeq > 0n, "requestedSeq names the discarded position");
          const fact = afterRestart[1]!;
          assert.ok(fact.kind === "fact" && fact.key === "k3" && fact.epoch === srv.epoch);
          assert.equal(sub.cursor.epoch, srv.epoch);
          assert.ok(conn.some((e) => e.state === "reconnecting"));
          await it.return?.();
        } finally {
          close();
          await srv.stop();
        }
      });
    }
  }
});

describe("with a 1s lease", { concurrency: true }, () => {
  for (const protocol of protocols) {
    it(`resumes after the lease ends without resync, losing and repeating nothing, over ${protocol}`, async () => {
      const srv = await startServer(["--demo=false", "--lease", "1s"]);
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const conn: ConnectionEvent[] = [];
        const sub = subscribe(transport, { backoff: fastBackoff, onConnection: (e) => conn.push(e) });
        const published: string[] = [];
        const publisher = (async () => {
          const end = Date.now() + 2_300;
          for (let n = 0; Date.now() < end; n++) {
            const seq = await publish(srv.url, [0, 1].map((i) => ({ topic: "lease/t", type: "x.n", data: { n, i } })));
            published.push(`${seq}/0`, `${seq}/1$`);
            await new Promise((r) => setTimeout(r, 100));
          }
          const seq = await publish(srv.url, [{ topic: "lease/t", type: "x.end", data: {} }]);
          published.push(`${seq}/0$`);
        })();
        const consume = readUntilEnd(sub);
        await publisher;
        const { got, kinds } = await withTimeout(consume, 10_000, "consume everything published");
        assert.deepEqual(got, published);
        assert.ok(!kinds.has("resynced"), "a lease end is not a resync");
        const connects = conn.filter((e) => e.state === "connecting");
        assert.ok(connects.length >= 2, `expected a reconnect after the lease, got ${connects.length} connects`);
        for (const c of connects.slice(1)) {
          assert.ok(c.state === "connecting" && c.cursor.seq > 0n && c.cursor.epoch === srv.epoch, "reconnects carry the cursor");
        }
        const ends = conn.filter((e) => e.state === "reconnecting");
        assert.ok(ends.every((e) => e.state === "reconnecting" && e.error === undefined), "lease ends are OK, not errors");
      } finally {
        close();
        await srv.stop();
      }
    });
  }

  it("does not repeat caught_up after a reconnect that replayed nothing", async () => {
    const srv = await startServer(["--demo=false", "--lease", "1s"]);
    const { transport, close } = transportFor("connect", srv.url);
    try {
      const conn: ConnectionEvent[] = [];
      let reconnected: () => void = () => {};
      const twoReconnects = new Promise<void>((r) => (reconnected = r));
      const sub = subscribe(transport, {
        backoff: fastBackoff,
        onConnection: (e) => {
          conn.push(e);
          if (conn.filter((c) => c.state === "caught_up").length >= 3) reconnected();
        },
      });
      const it = sub[Symbol.asyncIterator]();
      assert.equal(label(await next(it)), "caught_up");
      const pending = next(it, "the fact published after two quiet reconnects");
      await withTimeout(twoReconnects, 10_000, "two lease ends");
      const seq = await publish(srv.url, [{ topic: "quiet/t", type: "x.q", data: {} }]);
      assert.equal(label(await pending), `${seq}/0$`);
      await it.return?.();
    } finally {
      close();
      await srv.stop();
    }
  });
});

describe("an incomplete latest_per_key snapshot", () => {
  it("reports the keys the server evicted in caught_up", async () => {
    const srv = await startServer(["--demo=false", "--state-keys", "2"]);
    const { transport, close } = transportFor("connect", srv.url);
    try {
      await publish(
        srv.url,
        ["k1", "k2", "k3"].map((key) => ({ topic: "gauges/a", type: "gauge.level", key, data: { key } })),
      );
      const keys: string[] = [];
      let caughtUp: StreamItem | undefined;
      for await (const item of subscribe(transport, { snapshot: "latest_per_key", endAtHead: true })) {
        if (item.kind === "fact") keys.push(item.key);
        if (item.kind === "caught_up") caughtUp = item;
      }
      assert.deepEqual(keys, ["k2", "k3"]);
      assert.ok(caughtUp?.kind === "caught_up");
      assert.equal(caughtUp.snapshotEvictedKeys, 1n);
    } finally {
      close();
      await srv.stop();
    }
  });
});

describe("a publish refused by the server's per-client rate", () => {
  // The rule is checked on the attempts themselves, as the transport sees
  // them, not on how long the publish took: a publish that finds the
  // allowance refilled (the machine paused for a second) is not refused at
  // all, so each round first empties the bucket with single requests until
  // one is refused, and rounds repeat until the publish under test was
  // refused. With a burst of 1, two requests less than a second apart are
  // enough for a refusal.
  it("is retried no sooner than the Retry-After the server sent, and then succeeds", async () => {
    const srv = await startServer(["--demo=false", "--publish-rate", "1", "--publish-burst", "1"]);
    const attempts: Attempt[] = [];
    const record: Interceptor = (next) => async (req) => {
      if (req.method.name !== "PublishBatch") return next(req);
      const a: Attempt = { start: performance.now(), answered: 0, refused: false, retryAfterMs: 0 };
      attempts.push(a);
      try {
        return await next(req);
      } catch (e) {
        a.answered = performance.now();
        const err = ConnectError.from(e);
        a.refused = err.code === Code.ResourceExhausted;
        a.retryAfterMs = 1000 * Number.parseInt(err.metadata.get("retry-after") ?? "0", 10);
        throw e;
      }
    };
    const transport = createConnectTransport({ baseUrl: srv.url, httpVersion: "1.1", interceptors: [record] });
    try {
      const facts = [{ topic: "a", type: "t", data: { n: 1 } }];
      const fast = { minMs: 1, initialMs: 1, maxMs: 1 };
      for (let round = 1; round <= 10; round++) {
        await emptyPublishBucket(srv.url);
        attempts.length = 0;
        const failed = await publishCommit(transport, facts, { backoff: fast, attempts: 2 }).then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
        const [refused, retry, ...more] = attempts;
        if (refused !== undefined && !refused.refused) {
          assert.equal(failed, undefined, "a publish the server did not refuse failed");
          continue; // the allowance refilled before it: empty it again
        }
        assert.ok(refused !== undefined && retry !== undefined && more.length === 0, `${attempts.length} attempts, want a refused one and one retry`);
        assert.ok(refused.retryAfterMs >= 1000, `refusal carried Retry-After ${refused.retryAfterMs} ms`);
        // Node starts a timer from the event loop's clock, kept in whole
        // milliseconds, so a wait of N ms can measure up to 1 ms short in
        // performance.now(); 2 ms covers that granularity and nothing else.
        const waited = retry.start - refused.answered;
        assert.ok(waited >= refused.retryAfterMs - 2, `retried ${waited.toFixed(1)} ms after a refusal with Retry-After ${refused.retryAfterMs} ms`);
        assert.equal(failed, undefined, "the retry after Retry-After failed");
        assert.equal(retry.refused, false, "the retry after Retry-After was refused");
        return;
      }
      assert.fail("no publish was refused in 10 rounds");
    } finally {
      await srv.stop();
    }
  });
});

/** Attempt is one PublishBatch request: when it started, when its refusal arrived, and the Retry-After it carried. */
interface Attempt {
  start: number;
  answered: number;
  refused: boolean;
  retryAfterMs: number;
}

/**
 * emptyPublishBucket publishes single requests (no retries) until the server
 * refuses one for its publish rate. With a burst of 1 that takes two
 * requests unless a second passes between them; it gives up after 10.
 */
async function emptyPublishBucket(url: string): Promise<void> {
  for (let i = 0; i < 10; i++) {
    try {
      await publish(url, [{ topic: "a", type: "t", data: { n: 0 } }]);
    } catch (e) {
      if (ConnectError.from(e).code === Code.ResourceExhausted) return;
      throw e;
    }
  }
  assert.fail("10 publishes in a row were not refused by a publish rate of 1/s, burst 1");
}

/** position is a cursor less its fingerprint. */
function position(c: Cursor): Cursor {
  return { epoch: c.epoch, seq: c.seq, fact: c.fact };
}
