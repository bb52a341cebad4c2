// Client logic against a scripted server (an in-process Connect router):
// bounds, aborts, return(), callback errors, idle timeout options, backoff
// resets and cursor moves that a real server produces only rarely.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import type { MessageInitShape } from "@bufbuild/protobuf";
import { createRouterTransport, type HandlerContext, type Transport } from "@connectrpc/connect";

import {
  EventService,
  SubscribeEventsResponseSchema,
  type SubscribeEventsRequest,
} from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { subscribe, type ConnectionEvent, type StreamItem } from "../src/index.js";
import { withTimeout } from "./harness.js";

type Res = MessageInitShape<typeof SubscribeEventsResponseSchema>;
const E = 0x1234n;
const fastBackoff = { minMs: 5, initialMs: 10, maxMs: 40 };

/** A server whose n-th stream (0-based) is script(req, n, ctx). */
function scripted(script: (req: SubscribeEventsRequest, n: number, ctx: HandlerContext) => AsyncIterable<Res>): { transport: Transport; requests: SubscribeEventsRequest[] } {
  const requests: SubscribeEventsRequest[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(EventService, {
      subscribeEvents(req, ctx) {
        requests.push(req);
        return script(req, requests.length - 1, ctx);
      },
      publish() {
        throw new Error("not in these tests");
      },
      getServerStatus() {
        throw new Error("not in these tests");
      },
    });
  });
  return { transport, requests };
}

/** quiet waits until the stream is cancelled: a server with nothing to say. */
function quiet(ctx: HandlerContext): Promise<void> {
  return new Promise((res) => {
    if (ctx.signal.aborted) res();
    ctx.signal.addEventListener("abort", () => res(), { once: true });
  });
}

const commit = (seq: bigint, indexes: number[], factCount = Math.max(0, ...indexes) + 1): Res => ({
  seq,
  instanceEpoch: E,
  event: {
    case: "commit",
    value: { factCount, facts: indexes.map((index) => ({ index, topic: "t/a", type: "x", key: `k${index}`, payload: { case: "data", value: { index } } })) },
  },
});
const progress = (seq: bigint): Res => ({ seq, instanceEpoch: E, event: { case: "progress", value: {} } });
const status = (seq: bigint): Res => ({ seq, instanceEpoch: E, event: { case: "serverStatus", value: { instanceEpoch: E, headSeq: seq } } });
const caughtUp = (headSeq: bigint): Res => ({ instanceEpoch: E, event: { case: "caughtUp", value: { headSeq } } });

function label(item: StreamItem): string {
  return item.kind === "fact" ? `${item.seq}/${item.index}${item.last ? "$" : ""}` : item.kind;
}

async function drain(it: AsyncIterator<StreamItem>, ms = 2_000): Promise<string[]> {
  const got: string[] = [];
  for (;;) {
    const r = await withTimeout(it.next(), ms, `the iteration to end after ${got.join(",")}`);
    if (r.done) return got;
    got.push(label(r.value as StreamItem));
  }
}

describe("bounded reads", () => {
  it("end right after the rest of commit untilSeq when resuming inside it", async () => {
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield commit(5n, [0, 1, 2]);
      await quiet(ctx); // nothing more on a quiet server
    });
    const sub = subscribe(transport, { cursor: { epoch: E, seq: 5n, fact: 1 }, untilSeq: 5n, backoff: fastBackoff });
    assert.deepEqual(await drain(sub[Symbol.asyncIterator]()), ["5/1", "5/2$"]);
    assert.deepEqual(sub.cursor, { epoch: E, seq: 5n, fact: 0 });
  });

  it("end right after the fact that completes untilSeq, and after a Progress that reaches it", async () => {
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield commit(3n, [0, 1]);
      yield progress(4n);
      await quiet(ctx);
    });
    const a = subscribe(transport, { cursor: { epoch: E, seq: 2n, fact: 0 }, untilSeq: 3n, backoff: fastBackoff });
    assert.deepEqual(await drain(a[Symbol.asyncIterator]()), ["3/0", "3/1$"]);
    const b = subscribe(transport, { cursor: { epoch: E, seq: 2n, fact: 0 }, untilSeq: 4n, backoff: fastBackoff });
    assert.deepEqual(await drain(b[Symbol.asyncIterator]()), ["3/0", "3/1$"]);
    assert.deepEqual(b.cursor, { epoch: E, seq: 4n, fact: 0 });
  });
});

describe("abort", () => {
  it("is prompt mid-commit: the next next() rejects and the cursor stays on the last fact handed over", async () => {
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield commit(7n, [0, 1, 2]);
      await quiet(ctx);
    });
    const ac = new AbortController();
    const sub = subscribe(transport, { cursor: { epoch: E, seq: 6n, fact: 0 }, signal: ac.signal, backoff: fastBackoff });
    const it = sub[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(label(first.value as StreamItem), "7/0");
    ac.abort(); // while the application holds 7/0
    await assert.rejects(it.next(), (e: unknown) => e instanceof Error && e.name === "AbortError");
    assert.deepEqual(sub.cursor, { epoch: E, seq: 7n, fact: 1 });
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });
});

/**
 * deafToAbort is transport with its streams' cancellation cut off: a call's
 * abort never reaches the server, so a pending read never settles — as
 * fetch in Node has been seen to leave a streaming body's read.
 */
function deafToAbort(transport: Transport): Transport {
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => transport.unary(method, signal, timeoutMs, header, input, contextValues),
    stream: (method, _signal, timeoutMs, header, input, contextValues) => transport.stream(method, undefined, timeoutMs, header, input, contextValues),
  };
}

describe("a transport whose pending read ignores the abort", () => {
  it("does not hold a subscription its caller aborted", async () => {
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield caughtUp(0n);
      await quiet(ctx); // never, here: the abort does not reach it
    });
    const ac = new AbortController();
    const sub = subscribe(deafToAbort(transport), { signal: ac.signal, backoff: fastBackoff });
    const it = sub[Symbol.asyncIterator]();
    assert.equal(label((await it.next()).value as StreamItem), "caught_up");
    const pending = it.next();
    ac.abort();
    await assert.rejects(withTimeout(pending, 2_000, "the pending next()"), (e: unknown) => e instanceof Error && e.name === "AbortError");
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });

  it("does not hold a subscription past its idle timeout: it reconnects", async () => {
    const { transport, requests } = scripted(async function* (_req, n, ctx) {
      if (n > 0) yield caughtUp(0n);
      await quiet(ctx); // the first is silent: not even a heartbeat
    });
    const sub = subscribe(deafToAbort(transport), { idleTimeoutMs: 50, backoff: fastBackoff });
    const it = sub[Symbol.asyncIterator]();
    try {
      assert.equal(label((await withTimeout(it.next(), 2_000, "caught_up on the reconnect")).value as StreamItem), "caught_up");
      assert.equal(requests.length, 2);
    } finally {
      await it.return!();
    }
  });
});

describe("return()", () => {
  it("ends a next() that waits for a quiet stream, promptly", async () => {
    let cancelled = false;
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield caughtUp(0n);
      await quiet(ctx);
      cancelled = true;
    });
    const sub = subscribe(transport, { backoff: fastBackoff });
    const it = sub[Symbol.asyncIterator]();
    assert.equal(label((await it.next()).value as StreamItem), "caught_up");
    const pending = it.next();
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    await withTimeout(it.return!(), 1_000, "return()");
    assert.deepEqual(await withTimeout(pending, 1_000, "the pending next()"), { done: true, value: undefined });
    assert.ok(performance.now() - t0 < 500, "return() took too long");
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(cancelled, "the stream was cancelled");
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });

  it("ends a next() that waits out a reconnect delay", async () => {
    const { transport } = scripted(async function* () {
      yield caughtUp(0n); // and end: the client waits before reconnecting
    });
    const sub = subscribe(transport, { backoff: { minMs: 5_000, initialMs: 5_000, maxMs: 5_000 } });
    const it = sub[Symbol.asyncIterator]();
    assert.equal(label((await it.next()).value as StreamItem), "caught_up");
    const pending = it.next();
    await new Promise((r) => setTimeout(r, 50));
    await withTimeout(it.return!(), 1_000, "return()");
    assert.deepEqual(await withTimeout(pending, 1_000, "the pending next()"), { done: true, value: undefined });
  });
});

describe("errors that are not the transport's", () => {
  it("from onConnection reach the caller and are not retried", async () => {
    for (const failOn of ["connecting", "open", "caught_up"] as const) {
      const { transport, requests } = scripted(async function* (_req, _n, ctx) {
        yield status(1n);
        yield caughtUp(1n);
        await quiet(ctx);
      });
      const boom = new Error(`callback failed on ${failOn}`);
      const sub = subscribe(transport, {
        backoff: fastBackoff,
        onConnection: (e) => {
          if (e.state === failOn) throw boom;
        },
      });
      const it = sub[Symbol.asyncIterator]();
      await assert.rejects(withTimeout(it.next(), 2_000, failOn), (e: unknown) => e === boom);
      assert.ok(requests.length <= 1, `${failOn}: ${requests.length} subscribes`);
    }
  });
});

describe("sinceTime", () => {
  it("rejects an invalid Date at subscribe()", () => {
    const { transport } = scripted(async function* () {});
    for (const v of [new Date(Number.NaN), "2026-12-01T09:00:00Z" as unknown as Date]) {
      assert.throws(() => subscribe(transport, { sinceTime: v }), RangeError);
    }
  });

  it("a saved cursor wins over the time", async () => {
    let sent!: () => void;
    const subscribed = new Promise<void>((r) => (sent = r));
    const { transport, requests } = scripted(async function* (_req, _n, ctx) {
      sent();
      await quiet(ctx);
    });
    const stop = new AbortController();
    const sub = subscribe(transport, { cursor: "rc1.0000000000001234.2.0", sinceTime: new Date("2026-12-01T09:00:00Z"), signal: stop.signal });
    const it = sub[Symbol.asyncIterator]();
    const next = it.next();
    await withTimeout(subscribed, 2_000, "the subscribe");
    assert.deepEqual([requests[0]!.sinceSeq, requests[0]!.sinceTime], [2n, undefined]);
    stop.abort();
    await next.catch(() => {});
  });
});

describe("idleTimeoutMs", () => {
  it("rejects NaN and infinite values at subscribe()", () => {
    const { transport } = scripted(async function* () {});
    for (const v of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      assert.throws(() => subscribe(transport, { idleTimeoutMs: v }), RangeError);
    }
  });

  for (const [v, what] of [
    [0, "0 means the default"],
    [-1, "negative disables the check"],
  ] as const) {
    it(`${what}: a stream silent for a while is kept`, async () => {
      const { transport, requests } = scripted(async function* (_req, _n, ctx) {
        await new Promise((r) => setTimeout(r, 150));
        yield caughtUp(0n);
        await quiet(ctx);
      });
      const sub = subscribe(transport, { idleTimeoutMs: v, backoff: fastBackoff });
      const it = sub[Symbol.asyncIterator]();
      assert.equal(label((await withTimeout(it.next(), 2_000, "caught_up")).value as StreamItem), "caught_up");
      assert.equal(requests.length, 1);
      await it.return!();
    });
  }

  it("by default follows the heartbeat interval CaughtUp announces", async () => {
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield { instanceEpoch: E, event: { case: "caughtUp", value: { headSeq: 0n, heartbeatInterval: { seconds: 0n, nanos: 50_000_000 } } } };
      await quiet(ctx); // not even a heartbeat: a dead connection
    });
    let reconnected: () => void = () => {};
    const twice = new Promise<void>((r) => (reconnected = r));
    const sub = subscribe(transport, {
      backoff: fastBackoff,
      onConnection: (e) => {
        if (e.state === "connecting" && e.attempt > 0) reconnected();
      },
    });
    const it = sub[Symbol.asyncIterator]();
    try {
      assert.equal(label((await it.next()).value as StreamItem), "caught_up");
      const pending = it.next();
      const t0 = performance.now();
      await withTimeout(twice, 3_000, "a reconnect after 3 × 50 ms + 1 s of silence");
      assert.ok(performance.now() - t0 < 2_000, "reconnected after the announced interval, not the 45 s default");
      await it.return!();
      assert.deepEqual(await pending, { done: true, value: undefined });
    } finally {
      await it.return!();
    }
  });

  it("a positive value reconnects a silent stream", async () => {
    const { transport, requests } = scripted(async function* (_req, n, ctx) {
      if (n > 0) yield caughtUp(0n);
      await quiet(ctx);
    });
    const sub = subscribe(transport, { idleTimeoutMs: 50, backoff: fastBackoff });
    const it = sub[Symbol.asyncIterator]();
    assert.equal(label((await withTimeout(it.next(), 2_000, "caught_up")).value as StreamItem), "caught_up");
    assert.equal(requests.length, 2);
    await it.return!();
  });
});

describe("backoff reset", () => {
  it("needs a new position: a stream that only repeats the cursor's position and ends does not reset it", async () => {
    const { transport } = scripted(async function* (req, n) {
      yield status(5n);
      yield caughtUp(5n);
      if (n === 3) yield commit(6n, [0]); // a new position: healthy
    });
    const conn: ConnectionEvent[] = [];
    const ac = new AbortController();
    const sub = subscribe(transport, {
      cursor: { epoch: E, seq: 5n, fact: 0 },
      signal: ac.signal,
      backoff: { minMs: 1, initialMs: 2, maxMs: 4 },
      onConnection: (e) => {
        conn.push(e);
        if (conn.filter((c) => c.state === "reconnecting").length >= 6) ac.abort();
      },
    });
    await assert.rejects(drain(sub[Symbol.asyncIterator]()), (e: unknown) => e instanceof Error && e.name === "AbortError");
    const attempts = conn.flatMap((e) => (e.state === "reconnecting" ? [e.attempt] : []));
    assert.deepEqual(attempts.slice(0, 6), [0, 1, 2, 0, 1, 2]);
  });

  it("after a stream that lived resetMs", async () => {
    const { transport } = scripted(async function* (_req, n) {
      yield status(5n);
      if (n === 2) await new Promise((r) => setTimeout(r, 120));
    });
    const conn: ConnectionEvent[] = [];
    const ac = new AbortController();
    const sub = subscribe(transport, {
      cursor: { epoch: E, seq: 5n, fact: 0 },
      signal: ac.signal,
      backoff: { minMs: 1, initialMs: 2, maxMs: 4, resetMs: 100 },
      onConnection: (e) => {
        conn.push(e);
        if (conn.filter((c) => c.state === "reconnecting").length >= 4) ac.abort();
      },
    });
    await assert.rejects(drain(sub[Symbol.asyncIterator]()), (e: unknown) => e instanceof Error && e.name === "AbortError");
    const attempts = conn.flatMap((e) => (e.state === "reconnecting" ? [e.attempt] : []));
    assert.deepEqual(attempts.slice(0, 4), [0, 1, 0, 1]);
  });
});

describe("commits with nothing left to deliver", () => {
  it("move the cursor to (seq, 0)", async () => {
    const { transport } = scripted(async function* (_req, _n, ctx) {
      yield commit(5n, [0], 3); // the rest of commit 5 is filtered out
      yield commit(6n, [], 2); // nothing of commit 6 matches
      await quiet(ctx);
    });
    const conn: ConnectionEvent[] = [];
    const sub = subscribe(transport, { cursor: { epoch: E, seq: 5n, fact: 1 }, untilSeq: 6n, backoff: fastBackoff, onConnection: (e) => conn.push(e) });
    assert.deepEqual(await drain(sub[Symbol.asyncIterator]()), []);
    assert.deepEqual(sub.cursor, { epoch: E, seq: 6n, fact: 0 });
    assert.equal(conn.filter((e) => e.state === "connecting").length, 1);
  });
});

describe("the iterator", () => {
  it("is iterable itself, like an async generator", async () => {
    const { transport } = scripted(async function* () {
      yield commit(1n, [0]);
      yield caughtUp(1n);
    });
    const it = subscribe(transport, { endAtHead: true })[Symbol.asyncIterator]();
    const got: string[] = [];
    for await (const item of it as AsyncIterableIterator<StreamItem>) got.push(label(item));
    assert.deepEqual(got, ["1/0$", "caught_up"]);
  });
});
