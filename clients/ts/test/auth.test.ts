// The token option against a server with --auth jwt: a stream that ends at
// its token's expiry resumes with a fresh token, losing and repeating
// nothing; refusals are permanent.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
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

const secret = "ts-test-secret-0123456789abcdef-0123456789";
const keyFile = join(mkdtempSync(join(tmpdir(), "ringcast-auth-")), "secret");
writeFileSync(keyFile, `hmac:${secret}\n`);

/** endOf reads sub to its end: the error it ended with, or undefined. */
async function endOf(sub: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const _ of sub) {
      /* items until the end */
    }
  } catch (e) {
    return e;
  }
  return undefined;
}

/** hs256 signs claims with the test secret (any JWT library makes the same token). */
function hs256(claims: Record<string, unknown>): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const body = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(claims)}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}

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
            // exp 3 s ago: the server takes it for the rest of its 5 s
            // leeway, so a stream lasts 1–2 s.
            const now = Math.floor(Date.now() / 1000);
            return Promise.resolve(hs256({ sub: "reader", iat: now - 4, exp: now - 3, ringcast: { subscribe: ["auth/t"] } }));
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

  for (const protocol of protocols) {
    it(`serves a token inside the leeway until the server refuses it, then reconnects once and ends: never a loop, over ${protocol}`, async () => {
      const srv = await startServer(["--demo=false", "--auth", "jwt", "--jwt-key-file", keyFile]);
      const { transport, close } = transportFor(protocol, srv.url);
      try {
        // exp passed a second ago: inside the server's 5 s leeway.
        const now = Math.floor(Date.now() / 1000);
        const token = hs256({ sub: "reader", iat: now - 2, exp: now - 1, ringcast: { subscribe: ["*"] } });
        let connects = 0;
        let waited = false;
        const reconnects: string[] = [];
        const sub = subscribe(transport, {
          backoff: fastBackoff,
          token,
          onConnection: (ev) => {
            if (ev.state === "reconnecting") waited = true;
            if (ev.state !== "connecting") return;
            if (connects++ > 0) reconnects.push(waited ? "backoff" : "at_once");
            waited = false;
          },
        });
        const err = await withTimeout(endOf(sub), 60_000, "the end of the subscription");
        assert.ok(isTokenExpired(err), `ended with ${String(err)}, want token expired`);
        // One stream served until the token was refused, one reconnect at
        // once refused outright: a count bounded by the rule, not by time.
        assert.deepEqual(reconnects, ["at_once"], `reconnects ${JSON.stringify(reconnects)}`);
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
        const err = await withTimeout(endOf(sub), 10_000, "the refusal");
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
