// publish(): retries with one idempotency key, stops on permanent codes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";

import { EventService, type PublishBatchRequest } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { publish } from "../src/index.js";

const fast = { minMs: 1, initialMs: 2, maxMs: 5 };

/**
 * A server that appends on every call (deduplicating by key) and fails the
 * first `lose` responses with `code`. Outcome reads answer from what was
 * appended when `outcomes` is "served", not applied for "forgetful", and
 * Unimplemented for "absent".
 */
function server(lose: number, code = Code.Unavailable, outcomes: "served" | "forgetful" | "absent" = "absent") {
  const calls: PublishBatchRequest[] = [];
  const reads: string[] = [];
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
      getPublishOutcome(req) {
        reads.push(req.idempotencyKey);
        if (outcomes === "absent") throw new ConnectError("not served", Code.Unimplemented);
        const seq = outcomes === "served" ? seen.get(req.idempotencyKey) : undefined;
        return seq === undefined ? { applied: false } : { applied: true, receipt: { seq, duplicate: false } };
      },
    });
  });
  return { transport, calls, reads, head: () => head };
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

  it("confirmByOutcome: a lost receipt confirmed by an outcome read is the original receipt, not published again", async () => {
    const s = server(1, Code.Unavailable, "served");
    const r = await publish(s.transport, facts, { backoff: fast, confirmByOutcome: true, idempotencyKey: "k" });
    assert.deepEqual([r.seq, r.duplicate, s.head(), s.calls.length], [2n, true, 2n, 1]);
    assert.deepEqual(s.reads, ["k"]);
  });

  it("confirmByOutcome: not applied, or an outcome read that fails, retries the publish", async () => {
    for (const mode of ["forgetful", "absent"] as const) {
      const s = server(2, Code.Unavailable, mode);
      const r = await publish(s.transport, facts, { backoff: fast, confirmByOutcome: true });
      assert.deepEqual([r.seq, r.duplicate, s.calls.length, s.reads.length], [2n, true, 3, 2], mode);
      assert.equal(new Set(s.reads).size, 1, "one key");
    }
  });

  it("reads no outcome without confirmByOutcome, or after a permanent code", async () => {
    const s = server(1, Code.Unavailable, "served");
    await publish(s.transport, facts, { backoff: fast });
    assert.deepEqual([s.calls.length, s.reads.length], [2, 0]);
    const p = server(10, Code.InvalidArgument, "served");
    await assert.rejects(publish(p.transport, facts, { backoff: fast, confirmByOutcome: true }));
    assert.deepEqual([p.calls.length, p.reads.length], [1, 0]);
  });

  it("gives up after its attempts with the last error", async () => {
    const s = server(10);
    await assert.rejects(publish(s.transport, facts, { backoff: fast, attempts: 2 }), (e) => e instanceof ConnectError && e.code === Code.Unavailable);
    assert.equal(s.calls.length, 2);
  });
});
