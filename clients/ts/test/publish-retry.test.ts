// publish(): retries with one idempotency key, stops on permanent codes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";

import { EventService, type PublishBatchRequest } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { publish } from "../src/index.js";

const fast = { minMs: 1, initialMs: 2, maxMs: 5 };

/** A server that appends on every call (deduplicating by key) and fails the first `lose` responses with `code`. */
function server(lose: number, code = Code.Unavailable) {
  const calls: PublishBatchRequest[] = [];
  const seen = new Map<string, bigint>();
  let head = 1n;
  const transport = createRouterTransport(({ service }) => {
    service(EventService, {
      publishBatch(req) {
        calls.push(req);
        const receipts = req.commits.map((c) => {
          const dup = seen.get(c.idempotencyKey);
          if (dup !== undefined) return { seq: dup, duplicate: true };
          head++;
          seen.set(c.idempotencyKey, head);
          return { seq: head, duplicate: false };
        });
        if (calls.length <= lose) throw new ConnectError("response lost", code);
        return { receipts };
      },
    });
  });
  return { transport, calls, head: () => head };
}

const facts = [{ topic: "a/b", type: "t" }];

describe("publish", () => {
  it("retries a lost receipt with the same key and gets the original seq back", async () => {
    const s = server(2);
    const r = await publish(s.transport, facts, { backoff: fast });
    assert.equal(s.calls.length, 3);
    const keys = new Set(s.calls.map((c) => c.commits[0]!.idempotencyKey));
    assert.equal(keys.size, 1);
    assert.match([...keys][0]!, /^rc-[0-9a-f]{32}$/);
    assert.deepEqual([r.seq, r.duplicate, s.head()], [2n, true, 2n]);
  });

  it("uses the caller's key", async () => {
    const s = server(0);
    await publish(s.transport, facts, { idempotencyKey: "mine" });
    assert.equal(s.calls[0]!.commits[0]!.idempotencyKey, "mine");
  });

  it("does not retry a permanent code", async () => {
    const s = server(10, Code.InvalidArgument);
    await assert.rejects(publish(s.transport, facts, { backoff: fast }), (e) => e instanceof ConnectError && e.code === Code.InvalidArgument);
    assert.equal(s.calls.length, 1);
  });

  it("gives up after its attempts with the last error", async () => {
    const s = server(10);
    await assert.rejects(publish(s.transport, facts, { backoff: fast, attempts: 2 }), (e) => e instanceof ConnectError && e.code === Code.Unavailable);
    assert.equal(s.calls.length, 2);
  });
});
