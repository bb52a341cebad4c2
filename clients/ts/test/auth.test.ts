// The token option against a server with --auth jwt: a stream that ends at
// its token's expiry resumes with a fresh token, losing and repeating
// nothing; refusals are permanent.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

import { EventService, FactSchema } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { isTokenExpired, subscribe } from "../src/index.js";
import { protocols, serverBinary, startServer, transportFor, withTimeout, readUntilEnd } from "./harness.js";

const fastBackoff = { initialMs: 10, maxMs: 100, minMs: 2 };

const keyFile = join(mkdtempSync(join(tmpdir(), "ringcast-auth-")), "secret");
writeFileSync(keyFile, "ts-test-secret-0123456789abcdef-0123456789\n");

/** mint runs `ringcast token` (the CLI under test too). */
function mint(sub: string, ttl: string, publish: string[], subscribe: string[]): string {
  const args = ["token", "--key-file", keyFile, "--sub", sub, "--ttl", ttl];
  for (const t of publish) args.push("--publish", t);
  for (const t of subscribe) args.push("--subscribe", t);
  return execFileSync(serverBinary(), args, { encoding: "utf8" }).trim();
}

describe("with --auth jwt", { concurrency: true }, () => {
  const publisherToken = mint("publisher", "1h", ["auth"], []);

  for (const protocol of protocols) {
    it(`resumes across token expiries with a fresh token, losing and repeating nothing, over ${protocol}`, async () => {
      const srv = await startServer(["--demo=false", "--auth", "jwt", "--jwt-key-file", keyFile]);
      const { transport, close } = transportFor(protocol, srv.url);
      const pub = createClient(EventService, createConnectTransport({ baseUrl: srv.url, httpVersion: "1.1" }));
      const publish = async (n: number, topics: string[], type = "x.n") => {
        const res = await pub.publish(
          { facts: topics.map((topic, i) => create(FactSchema, { topic, type, payload: { case: "data", value: { n, i } } })) },
          { headers: { Authorization: `Bearer ${publisherToken}` } },
        );
        return res.seq;
      };
      try {
        let calls = 0;
        const sub = subscribe(transport, {
          backoff: fastBackoff,
          topics: ["auth/t"],
          token: async () => {
            calls++;
            return mint("reader", "2s", [], ["auth/t"]);
          },
        });
        const published: string[] = [];
        const publisher = (async () => {
          // Across at least two expiries (tokens live 1–2 s).
          const end = Date.now() + 4_500;
          for (let n = 0; Date.now() < end; n++) {
            const seq = await publish(n, ["auth/t", "auth/other", "auth/t"]);
            published.push(`${seq}/0`, `${seq}/2$`);
            await new Promise((r) => setTimeout(r, 150));
          }
          const seq = await publish(-1, ["auth/t"], "x.end");
          published.push(`${seq}/0$`);
        })();
        const consume = readUntilEnd(sub);
        await publisher;
        const { got, kinds } = await withTimeout(consume, 20_000, "consume everything published");
        assert.deepEqual(got, published);
        assert.ok(!kinds.has("resynced"), "an expiry is not a resync");
        // Tokens live at most 2 s and the feed runs 4.5 s: at least one
        // expiry, and a fresh token for the stream after it.
        assert.ok(calls >= 2, `token function called ${calls} times, want once more after an expiry`);
      } finally {
        close();
        await srv.stop();
      }
    });
  }

  it("ends with the refusal, calling the token function once, for a topic outside the grant", async () => {
    const srv = await startServer(["--demo=false", "--auth", "jwt", "--jwt-key-file", keyFile]);
    const { transport, close } = transportFor("web-grpcweb", srv.url);
    try {
      for (const [token, code] of [
        [mint("reader", "1h", [], ["other"]), Code.PermissionDenied],
        ["garbage", Code.Unauthenticated],
      ] as const) {
        let calls = 0;
        const sub = subscribe(transport, {
          backoff: fastBackoff,
          topics: ["auth/t"],
          token: () => {
            calls++;
            return Promise.resolve(token);
          },
        });
        const err = await withTimeout(
          (async () => {
            try {
              for await (const _ of sub) {
                /* nothing expected */
              }
            } catch (e) {
              return e;
            }
            return undefined;
          })(),
          10_000,
          "the refusal",
        );
        assert.ok(err instanceof ConnectError && err.code === code, `got ${String(err)}`);
        assert.ok(!isTokenExpired(err));
        assert.equal(calls, 1);
      }
      // A rejecting token function is an Unauthenticated error, not a retry loop.
      const sub = subscribe(transport, { token: () => Promise.reject(new Error("identity provider down")) });
      await assert.rejects(sub[Symbol.asyncIterator]().next(), (e) => e instanceof ConnectError && e.code === Code.Unauthenticated && e.rawMessage.includes("identity provider down"));
    } finally {
      close();
      await srv.stop();
    }
  });
});
