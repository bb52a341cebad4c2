// publishBatch against a real ringcast server, on every protocol.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Code, ConnectError, createClient } from "@connectrpc/connect";

import { EventService, publishBatch } from "../src/index.js";
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
          { facts: [fact("4")], idempotencyKey: "x" },
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
      } finally {
        close();
      }
    });
  });
}
