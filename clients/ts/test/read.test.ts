// outcome(), the sinceTime option and publish's confirmByOutcome against a
// real ringcast server, on every protocol.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

import { EventService, outcome, publish, publishBatch, subscribe, type StreamItem } from "../src/index.js";
import { protocols, startServer, transportFor, withTimeout, type Server } from "./harness.js";

const fact = (key: string) => ({ topic: "a/b", type: "t", key, payload: { case: "data" as const, value: { n: 1 } } });

async function readAll(items: AsyncIterable<StreamItem>): Promise<StreamItem[]> {
  const out: StreamItem[] = [];
  for await (const it of items) out.push(it);
  return out;
}

for (const protocol of protocols) {
  describe(`reads over ${protocol}`, () => {
    let srv: Server;
    before(async () => {
      srv = await startServer(["--demo=false"]);
    });
    after(async () => {
      await srv.stop();
    });

    it("outcome: the original receipt by key; not applied for an unknown key; an empty key fails without a request", async () => {
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const [r] = await publishBatch(transport, [{ facts: [fact("1")], idempotencyKey: `order-${protocol}` }]);
        const o = await outcome(transport, `order-${protocol}`);
        assert.equal(o.applied, true);
        assert.deepEqual([o.receipt?.seq, o.receipt?.instanceEpoch, o.receipt?.duplicate], [r!.seq, r!.instanceEpoch, false]);
        assert.deepEqual(o.receipt?.eventTime, r!.eventTime);
        assert.ok(o.rememberedSince instanceof Date && o.rememberedSince.getTime() <= Date.now(), "rememberedSince not later than now");
        const u = await outcome(transport, "never-sent");
        assert.deepEqual([u.applied, u.receipt], [false, undefined]);
        assert.ok(u.rememberedSince instanceof Date);
        await assert.rejects(outcome(transport, ""), (e) => e instanceof ConnectError && e.code === Code.InvalidArgument);
      } finally {
        close();
      }
    });

    it("sinceTime replays the commits at or after the time, then caught_up", async () => {
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const rs = await publishBatch(
          transport,
          [1, 2, 3, 4].map((i) => ({ facts: [fact(`s${i}`)] })),
        );
        // One batch: the same event time for all four. Take the time of the
        // batch before it as a lower bound that excludes nothing of it.
        const at = new Date(Number(rs[0]!.eventTime!.seconds) * 1000 + Math.floor(rs[0]!.eventTime!.nanos / 1e6));
        const items = await withTimeout(readAll(subscribe(transport, { sinceTime: at, endAtHead: true })), 10_000, "a read from a time");
        const seqs = items.filter((i) => i.kind === "fact").map((i) => (i.kind === "fact" ? i.seq : 0n));
        for (const r of rs) assert.ok(seqs.includes(r.seq), `seq ${r.seq} replayed (got ${seqs.join(",")})`);
        for (const i of items) {
          if (i.kind === "fact") assert.ok(i.eventTime! >= at, `fact ${i.seq} at ${i.eventTime?.toISOString()} before ${at.toISOString()}`);
        }
        assert.equal(items.at(-1)?.kind, "caught_up");
        const later = await withTimeout(readAll(subscribe(transport, { sinceTime: new Date("2999-01-01T00:00:00Z"), endAtHead: true })), 10_000, "a read from the future");
        assert.deepEqual(
          later.map((i) => i.kind),
          ["caught_up"],
        );
      } finally {
        close();
      }
    });
  });
}

describe("sinceTime below the window", () => {
  let srv: Server;
  before(async () => {
    srv = await startServer(["--demo=false", "--window", "16"]);
  });
  after(async () => {
    await srv.stop();
  });

  it("resyncs to a snapshot (never a partial replay), then resumes without the time", async () => {
    const { transport, close } = transportFor("connect", srv.url);
    try {
      await publishBatch(
        transport,
        Array.from({ length: 40 }, (_, i) => ({ facts: [fact(`w${i}`)] })),
      );
      let subscribes = 0;
      const items = await withTimeout(
        readAll(
          subscribe(transport, {
            sinceTime: new Date("2000-01-01T00:00:00Z"),
            endAtHead: true,
            backoff: { minMs: 1, initialMs: 2, maxMs: 5 },
            onConnection: (ev) => {
              if (ev.state === "connecting") subscribes++;
            },
          }),
        ),
        10_000,
        "a read from before the window",
      );
      const first = items[0];
      assert.ok(first?.kind === "resynced" && first.reasonName === "CURSOR_TOO_OLD", `first item ${JSON.stringify(first?.kind)}`);
      const facts = items.filter((i) => i.kind === "fact");
      assert.ok(facts.length > 0 && facts.length <= 16, `${facts.length} snapshot facts from a window of 16`);
      assert.equal(items.at(-1)?.kind, "caught_up");
      assert.equal(subscribes, 2, "one subscribe with the time, one for the snapshot");
    } finally {
      close();
    }
  });
});

describe("publish confirmByOutcome against a server", () => {
  let srv: Server;
  before(async () => {
    srv = await startServer(["--demo=false"]);
  });
  after(async () => {
    await srv.stop();
  });

  it("after a lost receipt, reads the outcome and returns the original receipt without publishing again", async () => {
    const calls: string[] = [];
    let lost = false;
    // The first PublishBatch reaches the server (and is appended); its
    // response is dropped on the way back.
    const lose: Interceptor = (next) => async (req) => {
      calls.push(req.method.name);
      const res = await next(req);
      if (req.method.name === "PublishBatch" && !lost) {
        lost = true;
        throw new ConnectError("connection lost", Code.Unavailable);
      }
      return res;
    };
    const transport = createConnectTransport({ baseUrl: srv.url, httpVersion: "1.1", interceptors: [lose] });
    const head = async () => (await createClient(EventService, transport).getServerStatus({})).status!.headSeq;
    const before = await head();
    const r = await publish(transport, [fact("c")], { confirmByOutcome: true, backoff: { minMs: 1, initialMs: 2, maxMs: 5 } });
    assert.deepEqual([r.seq, r.duplicate, r.instanceEpoch], [before + 1n, true, srv.epoch]);
    assert.ok(r.eventTime, "the original event time");
    assert.deepEqual(calls, ["GetServerStatus", "PublishBatch", "GetPublishOutcome"]);
    assert.equal(await head(), before + 1n, "one commit appended");
  });
});
