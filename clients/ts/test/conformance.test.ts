// The shared client spec: every vector in clients/conformance/vectors runs
// through a scripted server (an in-process Connect router), and every case
// of clients/conformance/backoff.json through resolveBackoff, every string
// of clients/conformance/cursors.json through parseCursor. The Go client
// runs the same files (server/internal/e2e/goclient/conformance_test.go,
// clients/go/ringcast/backoff_shared_test.go, cursor_shared_test.go).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import { fromJson, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport, type HandlerContext } from "@connectrpc/connect";

import {
  EventService,
  Reason,
  SubscribeEventsRequestSchema,
  SubscribeEventsResponseSchema,
  type SubscribeEventsRequest,
  type SubscribeEventsResponse,
} from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { CursorError, formatCursor, parseCursor, resolveBackoff, subscribe, type BackoffOptions, type StreamItem, type SubscribeOptions } from "../src/index.js";
import { parseRetryAfterMs, retryAfterMs } from "../src/backoff.js";
import { repoRoot, withTimeout } from "./harness.js";

interface Vector {
  name: string;
  description: string;
  options?: { cursor?: string; topics?: string[]; untilSeq?: string; endAtHead?: boolean; snapshot?: "retained" | "latest_per_key"; snapshotInline?: boolean; sinceTime?: string };
  stopAfterItems?: number;
  streams: { request: JsonObject; responses: JsonObject[]; end: string; message?: string }[];
  expect: { items: JsonObject[]; end: string; cursor: string; nextRequest?: JsonObject; reconnects?: string[] };
}

const dir = join(repoRoot, "clients/conformance/vectors");
const vectors: Vector[] = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Vector);

function codeOf(name: string): Code {
  const camel = name.replace(/(^|_)([a-z])/g, (_, _u: string, c: string) => c.toUpperCase()) as keyof typeof Code;
  const code = Code[camel];
  if (typeof code !== "number") throw new Error(`unknown code ${name}`);
  return code;
}

function nameOf(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i > 0 ? "_" : "") + c.toLowerCase());
}

function quiet(ctx: HandlerContext): Promise<void> {
  return new Promise((res) => {
    if (ctx.signal.aborted) res();
    ctx.signal.addEventListener("abort", () => res(), { once: true });
  });
}

const requestJson = (r: SubscribeEventsRequest): JsonValue => toJson(SubscribeEventsRequestSchema, r, { alwaysEmitImplicit: true });

function itemJson(item: StreamItem, cursor: string): JsonObject {
  const m: JsonObject = { kind: item.kind, epoch: item.epoch.toString(), cursor };
  switch (item.kind) {
    case "fact":
      Object.assign(m, { seq: item.seq.toString(), index: item.index, last: item.last });
      if (item.traceparent) m["traceparent"] = item.traceparent;
      break;
    case "caught_up":
      m["headSeq"] = item.headSeq.toString();
      break;
    case "resynced":
      Object.assign(m, { reason: `REASON_${Reason[item.reason]}`, inline: item.inline });
      break;
  }
  return m;
}

interface Run {
  items: JsonObject[];
  end: string;
  cursor: string;
  requests: SubscribeEventsRequest[];
  next?: SubscribeEventsRequest;
  /** How each reconnect was made: "at_once" or "backoff" (after a "reconnecting" delay). */
  reconnects: string[];
}

async function run(v: Vector, cursor: string | undefined, stopAfter: number): Promise<Run> {
  const requests: SubscribeEventsRequest[] = [];
  const stop = new AbortController();
  let next: SubscribeEventsRequest | undefined;
  const transport = createRouterTransport(({ service }) => {
    service(EventService, {
      async *subscribeEvents(req: SubscribeEventsRequest, ctx: HandlerContext): AsyncGenerator<SubscribeEventsResponse> {
        requests.push(req);
        const script = v.streams[requests.length - 1];
        if (script === undefined) {
          next ??= req;
          stop.abort(new Error("next request seen"));
          await quiet(ctx);
          return;
        }
        for (const r of script.responses) {
          yield fromJson(SubscribeEventsResponseSchema, r);
        }
        if (script.end === "hang") {
          await quiet(ctx);
        } else if (script.end !== "ok") {
          throw new ConnectError(script.message ?? "scripted end", codeOf(script.end));
        }
      },
      publish() {
        throw new Error("not scripted");
      },
      getServerStatus() {
        throw new Error("not scripted");
      },
    });
  });
  const o = v.options ?? {};
  const opts: SubscribeOptions = { signal: stop.signal, backoff: { minMs: 1, initialMs: 2, maxMs: 20 } };
  if (cursor !== undefined) opts.cursor = cursor;
  if (o.topics) opts.topics = o.topics;
  if (o.untilSeq !== undefined) opts.untilSeq = BigInt(o.untilSeq);
  if (o.endAtHead) opts.endAtHead = true;
  if (o.snapshot) opts.snapshot = o.snapshot;
  if (o.snapshotInline) opts.onUnservable = "snapshot_inline";
  if (o.sinceTime !== undefined) opts.sinceTime = new Date(o.sinceTime);
  const reconnects: string[] = [];
  let connects = 0;
  let waited = false;
  opts.onConnection = (ev) => {
    if (ev.state === "reconnecting") waited = true;
    if (ev.state !== "connecting") return;
    if (connects++ > 0) reconnects.push(waited ? "backoff" : "at_once");
    waited = false;
  };
  const sub = subscribe(transport, opts);
  const it = sub[Symbol.asyncIterator]();
  const items: JsonObject[] = [];
  let end = "finished";
  for (;;) {
    let r: IteratorResult<StreamItem, void>;
    try {
      r = await withTimeout(it.next(), 10_000, `vector ${v.name}: the iteration to end or reconnect after ${JSON.stringify(items)}`);
    } catch (e) {
      if (next !== undefined) {
        end = "reconnect";
      } else if (e instanceof ConnectError) {
        end = `error:${nameOf(e.code)}`;
      } else {
        throw e;
      }
      break;
    }
    if (r.done) break;
    items.push(itemJson(r.value, sub.cursorString()));
    if (stopAfter > 0 && items.length === stopAfter) {
      end = "stopped";
      await it.return?.();
      break;
    }
  }
  stop.abort();
  return { items, end, cursor: sub.cursorString(), requests, reconnects, ...(next ? { next } : {}) };
}

describe("conformance vectors (clients/conformance)", () => {
  it("has vectors", () => assert.ok(vectors.length > 10));
  for (const v of vectors) {
    it(`${v.name}: ${v.description}`, async () => {
      const r = await run(v, v.options?.cursor, v.stopAfterItems ?? 0);
      assert.deepEqual(r.items, v.expect.items, "items");
      assert.equal(r.end, v.expect.end, "end");
      assert.equal(r.cursor, v.expect.cursor, "cursor");
      if (v.expect.reconnects !== undefined) assert.deepEqual(r.reconnects, v.expect.reconnects, "reconnects");
      v.streams.forEach((s, i) => {
        const req = r.requests[i];
        if (req !== undefined) assert.deepEqual(requestJson(req), s.request, `request ${i}`);
        else assert.notEqual(v.expect.end, "reconnect", `stream ${i} was never requested`);
      });
      if (v.expect.end === "reconnect") {
        assert.ok(r.next, "no next request");
        assert.deepEqual(requestJson(r.next), v.expect.nextRequest, "next request");
      }
      if (v.expect.end === "stopped") {
        const again = await run({ ...v, streams: [] }, r.cursor, 0);
        assert.ok(again.next, "no request from the persisted cursor");
        assert.deepEqual(requestJson(again.next), v.expect.nextRequest, "request from the persisted cursor");
      }
    });
  }
});

describe("backoff bounds (clients/conformance/backoff.json)", () => {
  const file = JSON.parse(readFileSync(join(repoRoot, "clients/conformance/backoff.json"), "utf8")) as {
    cases: { name: string; given: BackoffOptions; want: Required<BackoffOptions> }[];
  };
  it("has cases", () => assert.ok(file.cases.length > 0));
  for (const c of file.cases) {
    it(c.name, () => assert.deepEqual(resolveBackoff(c.given), c.want));
  }
});

describe("Retry-After (clients/conformance/retry-after.json)", () => {
  const file = JSON.parse(readFileSync(join(repoRoot, "clients/conformance/retry-after.json"), "utf8")) as {
    cases: { header: string; ms: number }[];
  };
  it("has cases", () => assert.ok(file.cases.length > 0));
  for (const c of file.cases) {
    it(JSON.stringify(c.header), () => {
      const refusal = new ConnectError("slow down", Code.ResourceExhausted, { "retry-after": c.header });
      assert.equal(retryAfterMs(refusal), c.ms);
      assert.equal(parseRetryAfterMs(c.header), c.ms);
      assert.equal(retryAfterMs(new ConnectError("down", Code.Unavailable, { "retry-after": c.header })), 0, "only resource_exhausted asks for a wait");
    });
  }
});

describe("cursor text (clients/conformance/cursors.json)", () => {
  const file = JSON.parse(readFileSync(join(repoRoot, "clients/conformance/cursors.json"), "utf8")) as {
    valid: { text: string; epoch: string; seq: string; fact: number; fingerprint: number }[];
    invalid: { text: string; why: string }[];
  };
  it("has cases", () => assert.ok(file.valid.length > 0 && file.invalid.length > 0));
  for (const c of file.valid) {
    it(`parses ${JSON.stringify(c.text)}`, () => {
      const got = parseCursor(c.text);
      assert.equal(got.epoch, BigInt(c.epoch));
      assert.equal(got.seq, BigInt(c.seq));
      assert.equal(got.fact, c.fact);
      assert.equal(got.fingerprint ?? 0, c.fingerprint);
      assert.equal(formatCursor(got), c.text);
    });
  }
  for (const c of file.invalid) {
    it(`refuses ${JSON.stringify(c.text)} (${c.why})`, () => {
      assert.throws(() => parseCursor(c.text), CursorError);
    });
  }
});
