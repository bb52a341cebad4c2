// The fault scenarios of server/internal/e2e/faults, for the TypeScript client in Node
// over Connect, gRPC and gRPC-Web (two consumers on each transport in
// every scenario: connect-node's three and connect-web's fetch-based two),
// and for GET /events read by the `eventsource` package: the real server
// binary behind the Go fault proxy, a publisher, and a history
// checked by the Go checker — per consumer and epoch, no fact missing
// between resync boundaries, none repeated, order kept, every resync
// explained (docs/reliability.md, "What is proved under faults").
//
// Run: node --import tsx --test test/faults.test.ts (in clients/ts).
// A failure prints its seed; RINGCAST_FAULT_SEED=<seed> replays the schedule.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";

import { Run } from "./faultkit.js";

/** The consumers per transport in each scenario. */
const perTransport = 2;

/** The seeded proxy faults injected (a pause of about 150 ms before each: 1.5 s or so). */
const faultCount = 10;

/**
 * Each scenario's hang guard: generous, for a busy machine (a scenario
 * takes seconds); the scenarios assert on counts, never on time.
 */
const scenario = { timeout: 300_000 };

describe("faults: the TS client over connect, grpc and grpcweb (node and web transports) through the fault proxy", () => {
  it("proxy faults while publishing: every consumer given every fact once, in order", scenario, async (t) => {
    const r = await Run.start(t);
    r.consume(perTransport);
    r.publish(3);
    assert.equal(await r.proxy.faults(faultCount), faultCount);
    const { summary, stats } = await r.finish();
    assert.equal(stats["faults"], faultCount, "faults injected");
    t.diagnostic(`seed ${r.seed}: ${JSON.stringify(stats)}; ${summary}`);
  });

  it("leases of 1 s: every stream ends with its lease and resumes with its cursor", scenario, async (t) => {
    const r = await Run.start(t, ["--lease", "1s"]);
    r.consume(perTransport);
    r.publish(3);
    // Each consumer's stream ended OK (its lease) and resumed; no faults run.
    await r.everyConsumer("a lease end", (c) => c.cleanEnds >= 1);
    const { summary } = await r.finish();
    for (const c of r.consumers) assert.equal(c.resyncs, 0, `${c.name}: a lease end must resume, not resync`);
    t.diagnostic(`seed ${r.seed}: ${summary}`);
  });

  for (const how of ["kill", "drain"] as const) {
    const name = how === "kill" ? "server kill -9 and restart mid-stream" : "server SIGTERM drain and restart";
    it(`${name}: every consumer resyncs to the new epoch (EPOCH_MISMATCH) and continues`, scenario, async (t) => {
      const r = await Run.start(t);
      r.consume(perTransport);
      r.publish(3);
      await r.everyConsumer("given facts before the restart", (c) => c.facts >= 30);
      await r.restartServer(how);
      const before = new Map(r.consumers.map((c) => [c, c.facts]));
      await r.everyConsumer("given facts of the new epoch", (c) => c.at?.epoch === r.srv.epoch && c.facts >= before.get(c)! + 30);
      const { summary } = await r.finish();
      for (const c of r.consumers) {
        assert.ok(c.resyncs >= 1, `${c.name}: no resync across the restart`);
        assert.equal(c.at?.epoch, r.srv.epoch, `${c.name}: not in the new epoch`);
      }
      t.diagnostic(`seed ${r.seed}: ${summary}`);
    });
  }

  it("consumers stop mid-commit and resume from their persisted cursor text, under proxy faults", scenario, async (t) => {
    const r = await Run.start(t);
    r.consume(perTransport, 7);
    r.publish(3);
    assert.equal(await r.proxy.faults(faultCount), faultCount);
    const { summary, stats } = await r.finish();
    assert.equal(stats["faults"], faultCount, "faults injected");
    for (const c of r.consumers) assert.ok(c.restarts >= 1, `${c.name}: never stopped and resumed`);
    t.diagnostic(`seed ${r.seed}: ${JSON.stringify(stats)}; ${summary}`);
  });
});

describe("faults: GET /events through the fault proxy, read by eventsource", () => {
  for (const how of ["kill", "drain"] as const) {
    const restart = how === "kill" ? "kill -9" : "a SIGTERM drain";
    it(`SSE: resumes by Last-Event-ID through cuts and faults; a gap (EPOCH_MISMATCH) after ${restart} and restart`, scenario, async (t) => {
      // Fewer faults, further apart: each one costs EventSource its retry delay (1–2 s).
      const sseFaultCount = 3;
      const r = await Run.start(t, [], ["--every", "500ms"]);
      r.consumeSSE(3);
      r.publish(5);
      await r.everyConsumer("given a commit", (c) => c.at !== undefined);
      // A cut: every EventSource reconnects with its Last-Event-ID and resumes.
      assert.ok((await r.proxy.cut()) >= r.consumers.length, "the cut reached every stream");
      await r.everyConsumer("reconnected after the cut", (c) => c.connects >= 2);
      assert.equal(await r.proxy.faults(sseFaultCount), sseFaultCount);
      await r.restartServer(how);
      const before = new Map(r.consumers.map((c) => [c, c.facts]));
      await r.everyConsumer("given facts of the new epoch", (c) => c.at?.epoch === r.srv.epoch && c.facts >= before.get(c)! + 30);
      const { summary, stats } = await r.finish();
      assert.equal(stats["faults"], 1 + sseFaultCount, "the cut and the faults injected");
      for (const c of r.consumers) {
        assert.equal(c.resyncs, 1, `${c.name}: one gap, for the restart`);
        assert.equal(c.at?.epoch, r.srv.epoch, `${c.name}: not in the new epoch`);
      }
      t.diagnostic(`seed ${r.seed}: ${JSON.stringify(stats)}; ${summary}`);
    });
  }
});

describe("faults: the embedded store's bookkeeping lost, the commits whole", () => {
  it("every consumer (TS client on every transport, EventSource) resyncs to the new epoch the store is rebuilt under, and is given every commit once", scenario, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "ringcast-bookkeeping-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const r = await Run.start(t, ["--store", "embedded", "--data-dir", dir]);
    r.consume(perTransport);
    r.consumeSSE(2);
    r.publish(5);
    await r.everyConsumer("given facts before the fault", (c) => c.facts >= 30);
    const old = r.srv.epoch;
    // The ringcast_meta bucket's directory removed, the server stopped:
    // the store is rebuilt from the whole stream under a new epoch.
    await r.restartServer("drain", () => rmSync(join(dir, "jetstream", "$G", "streams", "KV_ringcast_meta"), { recursive: true }));
    assert.notEqual(r.srv.epoch, old, "served under the old epoch without its bookkeeping");
    assert.ok(r.carryOver(old, r.srv.epoch) >= 1, "no commit before the fault");
    const before = new Map(r.consumers.map((c) => [c, c.facts]));
    await r.everyConsumer("given facts of the new epoch", (c) => c.at?.epoch === r.srv.epoch && c.facts >= before.get(c)! + 30);
    const { summary } = await r.finish();
    for (const c of r.consumers) {
      assert.ok(c.resyncs >= 1, `${c.name}: no resync across the rebuild`);
      assert.equal(c.at?.epoch, r.srv.epoch, `${c.name}: not in the new epoch`);
    }
    t.diagnostic(`seed ${r.seed}: ${summary}`);
  });
});
