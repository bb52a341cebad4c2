// Cross-origin use in a real Chromium against a server with --auth jwt and
// --cors-origin: a page on the allowed origin publishes (Connect, after a
// preflight) and subscribes over gRPC-Web with the client's token option;
// a page on another origin is blocked by the browser; and a native
// EventSource carrying access_token resumes across lease ends by its own
// Last-Event-ID, losing and repeating nothing. (A page on another origin
// gets neither a Publish nor an EventSource through.)
//
// Without a runnable Chromium the test skips locally and FAILS under CI (CI=true).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server as HTTPServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import * as esbuild from "esbuild";
import type { Browser, Page } from "playwright-core";

import { repoRoot, serverBinary, startServer, type Server } from "../harness.js";
import { launch, waitFor } from "./chromium.js";

const inCI = process.env["CI"] === "true";

/** The page script: the TS client over gRPC-Web, exposed to the test. */
const entry = `
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { subscribe } from "./clients/ts/src/index.ts";
window.ringcastSubscribe = async (baseUrl, token, topics, n) => {
  const sub = subscribe(createGrpcWebTransport({ baseUrl }), { token, topics });
  const got = [];
  for await (const item of sub) {
    if (item.kind === "fact") got.push(item.key);
    if (got.length >= n) break;
  }
  return got;
};
`;

/** pageOrigin serves one HTML page (and the bundled client) on 127.0.0.1. */
async function pageOrigin(bundle: string): Promise<{ url: string; close(): Promise<void> }> {
  const srv: HTTPServer = createServer((req, res) => {
    if (req.url === "/client.js") {
      res.writeHead(200, { "Content-Type": "text/javascript" }).end(bundle);
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html" }).end(`<!doctype html><html lang="en"><title>other origin</title><script src="/client.js"></script></html>`);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return { url, close: () => new Promise((r) => srv.close(() => r())) };
}

describe("cross-origin pages in Chromium (--cors-origin)", () => {
  let browser: Browser | undefined;
  let unavailable: string | undefined;
  let dir = "";
  let keyFile = "";
  let allowed: Awaited<ReturnType<typeof pageOrigin>>;
  let other: Awaited<ReturnType<typeof pageOrigin>>;
  const mint = (...grants: string[]) =>
    execFileSync(serverBinary(), ["token", "--key-file", keyFile, "--sub", "cors-test", "--ttl", "10m", ...grants], { encoding: "utf8" }).trim();

  before(async () => {
    const b = await launch();
    if (typeof b === "string") {
      unavailable = b;
      return;
    }
    browser = b;
    dir = mkdtempSync(join(tmpdir(), "ringcast-cors-"));
    keyFile = join(dir, "hmac.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    const built = await esbuild.build({
      stdin: { contents: entry, resolveDir: repoRoot, loader: "ts" },
      bundle: true,
      format: "iife",
      write: false,
      logLevel: "silent",
    });
    const bundle = built.outputFiles[0]!.text;
    allowed = await pageOrigin(bundle);
    other = await pageOrigin(bundle);
  });
  after(async () => {
    await browser?.close();
    await allowed?.close();
    await other?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const skip = (t: { skip(m: string): void }) => {
    if (unavailable === undefined) return false;
    if (inCI) assert.fail(`CI=true and ${unavailable}`);
    t.skip(unavailable);
    return true;
  };

  const publishFrom = (page: Page, server: string, token: string, key: string) =>
    page.evaluate(
      async ([server, token, key]) => {
        try {
          const res = await fetch(`${server}/ringcast.v1.EventService/Publish`, {
            method: "POST",
            headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
            body: JSON.stringify({ facts: [{ topic: `cors/${key}`, type: "cors.test", key, data: { key } }] }),
          });
          return `${res.status} ${await res.text()}`;
        } catch (e) {
          return `blocked: ${String(e)}`;
        }
      },
      [server, token, key] as const,
    );

  it("lets the allowed origin publish and subscribe with a token, and blocks another origin", async (t) => {
    if (skip(t)) return;
    const srv: Server = await startServer(["--demo=false", "--auth", "jwt", "--jwt-key-file", keyFile, "--cors-origin", allowed.url]);
    try {
      const token = mint("--publish", "cors", "--subscribe", "cors");
      const page = await browser!.newPage();
      await page.goto(allowed.url + "/");
      assert.match(await publishFrom(page, srv.url, token, "a1"), /^200 .*"seq":"2"/);
      assert.match(await publishFrom(page, srv.url, token, "a2"), /^200 /);
      assert.match(await publishFrom(page, srv.url, "garbage", "a3"), /^401 .*token invalid/, "a refusal is readable cross-origin");
      const keys = await page.evaluate(([u, tok]) => (window as unknown as { ringcastSubscribe(u: string, t: string, topics: string[], n: number): Promise<string[]> }).ringcastSubscribe(u, tok, ["cors"], 2), [srv.url, token] as const);
      assert.deepEqual(keys, ["a1", "a2"]);

      const foreign = await browser!.newPage();
      await foreign.goto(other.url + "/");
      assert.match(await publishFrom(foreign, srv.url, token, "b1"), /^blocked: TypeError/);
      const es = await foreign.evaluate(
        ([u, tok]) =>
          new Promise<string>((resolve) => {
            const es = new EventSource(`${u}/events?topic=cors&access_token=${encodeURIComponent(tok)}`);
            es.addEventListener("commit", () => resolve("delivered"));
            es.addEventListener("error", () => resolve(es.readyState === EventSource.CLOSED ? "closed" : "error"));
          }),
        [srv.url, token] as const,
      );
      assert.equal(es, "closed", "EventSource from another origin fails for good");
      const status = await fetch(`${srv.url}/ringcast.v1.EventService/GetServerStatus?encoding=json&message=%7B%7D`).then((r) => r.json() as Promise<{ status: { headSeq: string } }>);
      assert.equal(status.status.headSeq, "3", "the blocked publish appended nothing");
      await page.close();
      await foreign.close();
    } finally {
      await srv.stop();
    }
  });

  it("resumes a native EventSource with access_token across lease ends", async (t) => {
    if (skip(t)) return;
    const srv: Server = await startServer(["--demo=false", "--lease", "1s", "--auth", "jwt", "--jwt-key-file", keyFile, "--cors-origin", allowed.url]);
    try {
      const token = mint("--publish", "cors", "--subscribe", "cors");
      const page = await browser!.newPage();
      await page.goto(allowed.url + "/");
      await page.evaluate(
        ([u, tok]) => {
          const w = window as unknown as { ids: string[]; keys: string[]; opens: number };
          w.ids = [];
          w.keys = [];
          w.opens = 0;
          const es = new EventSource(`${u}/events?topic=cors&access_token=${encodeURIComponent(tok)}`);
          es.addEventListener("open", () => w.opens++);
          es.addEventListener("commit", (e) => {
            const m = e as MessageEvent<string>;
            w.ids.push(m.lastEventId);
            for (const f of (JSON.parse(m.data) as { commit: { facts: { key: string }[] } }).commit.facts) w.keys.push(f.key);
          });
        },
        [srv.url, token] as const,
      );
      // Publish before, across and after lease ends: at least 30 facts, and
      // on until EventSource has opened a third time (two resumes) — a wait
      // on the leases ending, not on the facts taking long enough — then a
      // few more on the third connection.
      const published: string[] = [];
      const publishOne = async () => {
        const key = `e${published.length}`;
        await publishFrom(page, srv.url, token, key);
        published.push(key);
        await new Promise((r) => setTimeout(r, 100));
      };
      const opened = () => page.evaluate(() => (window as unknown as { opens: number }).opens);
      while (published.length < 30 || (await opened()) < 3) {
        assert.ok(published.length < 600, "EventSource did not open a third time (hang guard)");
        await publishOne();
      }
      for (let i = 0; i < 3; i++) await publishOne();
      await waitFor(page, (n) => (window as unknown as { keys: string[] }).keys.length >= n, published.length, "every published fact over EventSource");
      const { keys, ids, opens } = await page.evaluate(() => {
        const w = window as unknown as { keys: string[]; ids: string[]; opens: number };
        return { keys: w.keys, ids: w.ids, opens: w.opens };
      });
      assert.deepEqual(keys, published, "every fact once, in order");
      assert.equal(new Set(ids).size, ids.length, "no event id twice");
      assert.ok(opens >= 3, `EventSource opened ${opens} times; want resumes after lease ends`);
      await page.close();
    } finally {
      await srv.stop();
    }
  });
});
