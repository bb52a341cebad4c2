// publishBatch against a real ringcast server, on every protocol.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";

import { EventService, isKeyReused, publish, publishBatch } from "../src/index.js";
import { protocols, startServer, transportFor, type Server } from "./harness.js";

const fact = (key: string, topic = "a/b") => ({ topic, type: "t", key, payload: { case: "data" as const, value: { n: 1 } } });

for (const protocol of protocols) {
  describe(`publishBatch over ${protocol}`, () => {
    let srv: Server;
    before(async () => {
      srv = await startServer(["--demo=false"]);
    });
    after(async () => {
      await srv.stop();
    });

    it("appends in order with one receipt per commit, each deduplicated on its own", async () => {
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        const head = async () => (await createClient(EventService, transport).getServerStatus({})).status!.headSeq;
        const before = await head();
        const rs = await publishBatch(transport, [
          { facts: [fact("1"), fact("2", "a/c")] },
          { facts: [fact("3")], idempotencyKey: "x" },
          { facts: [fact("3")], idempotencyKey: "x" },
        ]);
        assert.deepEqual(
          rs.map((r) => [r.seq, r.duplicate, r.instanceEpoch]),
          [
            [before + 1n, false, srv.epoch],
            [before + 2n, false, srv.epoch],
            [before + 2n, true, srv.epoch],
          ],
        );
        await assert.rejects(
          publishBatch(transport, [{ facts: [fact("5")] }, { facts: [fact("6", "Bad/Topic")] }]),
          (e) => ConnectError.from(e).code === Code.InvalidArgument,
        );
        assert.equal(await head(), before + 2n, "a rejected batch appends nothing");
        // A key sent again with other facts: refused at once, told by isKeyReused.
        let calls = 0;
        const counting: Transport = {
          unary: (...args) => (calls++, transport.unary(...args)),
          stream: (...args) => transport.stream(...args),
        };
        await assert.rejects(publish(counting, [fact("9")], { idempotencyKey: "x", attempts: 5 }), (e) => isKeyReused(e) && ConnectError.from(e).code === Code.AlreadyExists);
        assert.equal(calls, 1, "a reused key is not retried");
        assert.equal(isKeyReused(new ConnectError("x", Code.InvalidArgument)), false);
        const dup = await publish(transport, [fact("3")], { idempotencyKey: "x" });
        assert.deepEqual([dup.seq, dup.duplicate], [before + 2n, true], "the same facts still get the receipt");
      } finally {
        close();
      }
    });
  });
}
