// The Server-Sent Events face (GET /events) against a real EventSource
// implementation (the `eventsource` package) and the real server binary:
// snapshot, caught-up and live; resumption by EventSource's own
// Last-Event-ID after the server ends a stream (lease) with no gap and no
// duplicate; a named gap after a restart (new epoch) and for a
// Last-Event-ID that does not parse; every data line parsed by the generated
// schema, as Connect JSON, with a positioned event's seq and instanceEpoch
// taken from its id (docs/sse.md, "The data line").
//
// Run: node --import tsx --test clients/ts/test/sse.eventsource.test.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventSource } from "eventsource";
import { Reason } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { formatEpoch } from "../src/cursor.js";
import { startServer, type Server } from "./harness.js";
import { sseMessage } from "./sse-message.js";

const waitMs = 15_000;

// publish appends one commit through the Connect JSON protocol.
async function publish(url: string, topic: string, n: number): Promise<bigint> {
  const res = await fetch(`${url}/ringcast.v1.EventService/Publish`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ facts: [{ topic, type: "test.fact", key: topic, data: { n } }] }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const body = (await res.json()) as { seq: string };
  return BigInt(body.seq);
}

interface Seen {
  type: string;
  id: string;
  data: string;
}

// Recorder keeps every event an EventSource dispatches, in order, and lets
// a test wait for a condition over them.
class Recorder {
  readonly seen: Seen[] = [];
  opens = 0;
  private waiters: Array<() => void> = [];

  constructor(readonly es: EventSource) {
    for (const type of ["commit", "status", "progress", "caught-up", "gap"]) {
      es.addEventListener(type, (e: MessageEvent) => this.push({ type, id: e.lastEventId, data: String(e.data) }));
    }
    es.addEventListener("open", () => {
      this.opens++;
      this.poke();
    });
  }

  private push(s: Seen): void {
    this.seen.push(s);
    this.poke();
  }

  private poke(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  async until(what: string, cond: () => boolean): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (!cond()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; saw ${JSON.stringify(this.seen.map((s) => [s.type, s.id]))}`);
      await new Promise<void>((res) => {
        const t = setTimeout(res, left);
        this.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }

  count(type: string): number {
    return this.seen.filter((s) => s.type === type).length;
  }

  // positionedEvents are the events that carry an id of their own
  // (MessageEvent.lastEventId of the others repeats the last id seen).
  positionedEvents(): Seen[] {
    return this.seen.filter((s) => positionedTypes.has(s.type));
  }

  // positioned returns the seqs of the positioned events, in order.
  positioned(): bigint[] {
    return this.positionedEvents().map((s) => seqOf(s.id));
  }
}

const positionedTypes = new Set(["commit", "status", "progress"]);
// An id: the epoch, the seq and the fingerprint of the commit at the seq.
const idPattern = /^[0-9a-f]{16}-[1-9][0-9]*-[0-9a-f]{8}$/;

function seqOf(id: string): bigint {
  assert.match(id, idPattern);
  return BigInt(id.slice(17, id.lastIndexOf("-")));
}

/** positionOf is an id less its fingerprint: `<epoch>-<seq>`. */
function positionOf(id: string): string {
  return id.slice(0, id.lastIndexOf("-"));
}

test("snapshot, caught-up, live; lease ends resume by Last-Event-ID without gap or duplicate", async () => {
  const srv = await startServer(["--lease", "1s"]);
  const es = new EventSource(`${srv.url}/events`);
  try {
    const rec = new Recorder(es);
    await rec.until("caught-up", () => rec.count("caught-up") >= 1);
    const first = rec.seen[0];
    assert.ok(first);
    assert.equal(first.type, "status");
    assert.equal(seqOf(first.id), 1n);

    // Publish through at least two lease ends (each ~1s, then a 1–2s
    // reconnect delay), so EventSource resumes by its own Last-Event-ID.
    const published: bigint[] = [];
    let n = 0;
    while (rec.opens < 3) {
      published.push(await publish(srv.url, "lease/t", n++));
      await rec.until(`commit ${published.at(-1)}`, () => rec.positioned().includes(published.at(-1)!));
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(n < 2000, "EventSource never reconnected");
    }
    published.push(await publish(srv.url, "lease/t", n++));
    await rec.until("the last commit", () => rec.positioned().includes(published.at(-1)!));

    assert.equal(rec.count("gap"), 0, "a lease end must resume, not gap");
    const seqs = rec.positioned();
    // Every seq once, in order, nothing missing: 1 (status), then commits.
    const want = Array.from({ length: seqs.length }, (_, i) => BigInt(i + 1));
    assert.deepEqual(seqs, want);
    for (const p of published) assert.ok(seqs.includes(p), `published seq ${p} not received`);
    // Each reconnect resumes (caught-up again) without a new snapshot.
    assert.ok(rec.count("caught-up") >= 3, `caught-up ${rec.count("caught-up")} times`);
    assert.equal(rec.count("status"), 1, "resumes must not replay the snapshot");
  } finally {
    es.close();
    await srv.stop();
  }
});

test("a restart (new epoch) gives a named gap, the snapshot, caught-up, then live", async () => {
  const a = await startServer();
  const es = new EventSource(`${a.url}/events`);
  let b: Server | undefined;
  try {
    const rec = new Recorder(es);
    await rec.until("caught-up", () => rec.count("caught-up") >= 1);
    await publish(a.url, "restart/t", 1);
    await rec.until("commit 2", () => rec.positioned().includes(2n));
    await a.stop(); // drains: ServerStatus(DRAINING), the stream ends, EventSource retries

    b = await startServer([], a.port); // the same URL: EventSource retries it
    await rec.until("gap", () => rec.count("gap") >= 1);
    const gapAt = rec.seen.findIndex((s) => s.type === "gap");
    const before = rec.seen.slice(0, gapAt).filter((s) => positionedTypes.has(s.type));
    const staleId = before.at(-1)!.id; // the draining status of the old instance
    assert.equal(before.at(-1)!.type, "status");
    assert.match(before.at(-1)!.data, /SERVER_STATE_DRAINING/);
    // The data is the Connect JSON message: the generated schema parses it
    // (strictly: an unknown field would throw). A gap has no id: its data
    // keeps instanceEpoch.
    const msg = sseMessage(rec.seen[gapAt]!.data, rec.seen[gapAt]!.id);
    assert.equal(msg.event.case, "gap");
    const gap = msg.event.value;
    assert.equal(gap.reason, Reason.EPOCH_MISMATCH);
    assert.equal(gap.requestedSeq, seqOf(staleId));
    // An id is the epoch's 16 hex digits, "-", the seq, "-", the
    // fingerprint: the JSON's decimal instanceEpoch names the same epoch.
    const oldestId = `${formatEpoch(msg.instanceEpoch)}-${gap.oldestSeq}`;
    assert.notEqual(oldestId.slice(0, 16), staleId.slice(0, 16), "the oldest id names the new epoch");

    await rec.until("caught-up after the gap", () => rec.seen.slice(gapAt).some((s) => s.type === "caught-up"));
    const afterGap = rec.seen.slice(gapAt + 1);
    const snapshotFirst = afterGap[0];
    assert.ok(snapshotFirst);
    assert.equal(positionOf(snapshotFirst.id), oldestId, "the snapshot starts at the oldest id the gap names");
    assert.equal(snapshotFirst.type, "status");

    const live = await publish(b.url, "restart/t", 2);
    await rec.until("the live commit", () =>
      rec.seen.slice(gapAt).some((s) => s.type === "commit" && s.id.startsWith(oldestId.slice(0, 16)) && seqOf(s.id) === live),
    );
  } finally {
    es.close();
    await a.stop();
    await b?.stop();
  }
});

test("a Last-Event-ID that does not parse gives a malformed_cursor gap, the snapshot, caught-up, then live", async () => {
  const srv = await startServer();
  const es = new EventSource(`${srv.url}/events?lastEventId=not-an-id`);
  try {
    const rec = new Recorder(es);
    await rec.until("caught-up", () => rec.count("caught-up") >= 1);
    assert.equal(rec.seen[0]?.type, "gap");
    const raw = JSON.parse(rec.seen[0]!.data) as { gap: { reason: string; requestedSeq?: string } };
    assert.equal(raw.gap.reason, "REASON_MALFORMED_CURSOR");
    assert.equal(raw.gap.requestedSeq, undefined, "requestedSeq is 0, so absent");
    assert.equal(rec.seen[1]?.type, "status", "the snapshot follows the gap");
    const live = await publish(srv.url, "malformed/t", 1);
    await rec.until("the live commit", () => rec.positioned().includes(live));
    // Every event's data is the Connect JSON message, less the position of
    // a positioned event, which its id carries (the epoch in 16 hex digits,
    // "-", the seq); the others keep the decimal instanceEpoch, and name the
    // same epoch as the ids.
    const epoch = rec.positionedEvents()[0]!.id.slice(0, 16);
    for (const ev of rec.seen) {
      const raw = JSON.parse(ev.data) as Record<string, unknown>;
      const msg = sseMessage(ev.data, ev.id);
      if (positionedTypes.has(ev.type)) {
        assert.ok(!("seq" in raw) && !("instanceEpoch" in raw) && !("fingerprint" in raw), `${ev.type} ${ev.id} repeats its position: ${ev.data}`);
        assert.equal(`${formatEpoch(msg.instanceEpoch)}-${msg.seq}-${msg.fingerprint.toString(16).padStart(8, "0")}`, ev.id);
      } else {
        assert.equal(typeof raw["instanceEpoch"], "string", `${ev.type} without instanceEpoch: ${ev.data}`);
        assert.equal(msg.seq, 0n);
        assert.equal(formatEpoch(msg.instanceEpoch), epoch);
      }
    }
    const first = rec.seen.find((e) => e.type === "commit")!;
    const commit = sseMessage(first.data, first.id);
    assert.equal(commit.event.case, "commit");
    assert.equal(commit.event.value.facts[0]?.topic, "malformed/t");
  } finally {
    es.close();
    await srv.stop();
  }
});
