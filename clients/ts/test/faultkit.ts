// The pieces of the fault scenarios (faults.test.ts): the Go fault proxy
// driven as a process (server/internal/testkit/faultproxy/cmd/faultproxy), a
// history written as JSON lines and checked by the Go checker
// (server/internal/testkit/history/cmd/historycheck, the one the Go fault tests
// use), a publisher, and consumers through the proxy: the TypeScript
// client over Connect, gRPC and gRPC-Web (Node's and the browser's
// transports), and `eventsource` on GET /events.
// docs/reliability.md says what is proved and how to replay a seed.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { TestContext } from "node:test";

import { createConnectTransport } from "@connectrpc/connect-node";
import { EventSource } from "eventsource";

import { formatEpoch, publish, reasonName, subscribe } from "../src/index.js";
import { ringtestTool, startServer, transportFor, type Protocol, type Server } from "./harness.js";
import { sseMessage } from "./sse-message.js";

/**
 * The transports under faults: connect-node's Connect, gRPC and gRPC-Web,
 * and connect-web's fetch-based Connect and gRPC-Web (the browser's).
 */
export const rpcProtocols: readonly Protocol[] = ["connect", "grpc", "grpcweb", "web-connect", "web-grpcweb"];

/** Quick reconnects keep a scenario short (the Go scenarios' backoff). */
const fastBackoff = { minMs: 5, initialMs: 20, maxMs: 200, resetMs: 1_000 };

/** Hang guard for a consumer to reach the last commit. */
const catchUpGuardMs = 60_000;

/** Hang guard for the consumers to end once their signal is aborted. */
const stopGuardMs = 30_000;

/** Hang guard for the fault proxy's first line (it listens, then prints it). */
const proxyStartGuardMs = 60_000;

/** rng is a seeded PRNG (splitmix64) in [0, 1): the same seed and stream give the same numbers. */
export function rng(seed: bigint, stream: number): () => number {
  const mask = (1n << 64n) - 1n;
  let x = (seed ^ (BigInt(stream) * 0x9e3779b97f4a7c15n)) & mask;
  return () => {
    x = (x + 0x9e3779b97f4a7c15n) & mask;
    let z = x;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & mask;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & mask;
    z ^= z >> 31n;
    return Number(z >> 11n) / 2 ** 53;
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** until polls cond (every 10 ms) until it holds; after guardMs (a hang guard) it rejects with what(). */
async function until(cond: () => boolean, guardMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + guardMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`hang guard (${guardMs} ms): ${what()}`);
    await sleep(10);
  }
}

/**
 * FaultProxy is the Go fault proxy in a child process, driven over stdin.
 * The proxy runs its commands one at a time and answers each before it
 * reads the next, so replies come in the order of the commands and are
 * matched first in, first out.
 */
export class FaultProxy {
  readonly #child: ChildProcess;
  readonly #waiting: Array<(line: string) => void> = []; // one per command sent and not yet answered, in order
  readonly #tail: string[] = []; // the fault and stats lines printed at the end
  readonly #exited: Promise<void>;

  private constructor(
    child: ChildProcess,
    readonly addr: string,
    readonly seed: bigint,
    lines: AsyncIterator<string>,
  ) {
    this.#child = child;
    this.#exited = (async () => {
      for (let r = await lines.next(); !r.done; r = await lines.next()) {
        const line = r.value;
        if (line.startsWith("ok ") || line.startsWith("error ")) this.#waiting.shift()?.(line);
        else this.#tail.push(line);
      }
      for (const w of this.#waiting.splice(0)) w("error: the proxy exited");
    })();
  }

  /** start runs the proxy to target; its seed is RINGCAST_FAULT_SEED when set (the child inherits it). */
  static async start(target: string, flags: string[] = []): Promise<FaultProxy> {
    const child = spawn(ringtestTool("faultproxy"), ["--target", target, ...flags], { stdio: ["pipe", "pipe", "inherit"] });
    child.stdin!.on("error", () => {}); // a proxy that exited: the pending command fails instead
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    let timer: NodeJS.Timeout | undefined;
    const guard = new Promise<"hang">((res) => (timer = setTimeout(() => res("hang"), proxyStartGuardMs)));
    const first = await Promise.race([lines.next(), guard]).finally(() => clearTimeout(timer));
    if (first === "hang") {
      child.kill();
      throw new Error(`hang guard (${proxyStartGuardMs} ms): faultproxy printed no first line (addr=… seed=…)`);
    }
    const m = /^addr=(\S+) seed=(\d+)$/.exec(first.done ? "" : first.value);
    if (!m) {
      child.kill();
      throw new Error(first.done ? "faultproxy: exited before its first line (addr=… seed=…)" : `faultproxy: unexpected first line ${JSON.stringify(first.value)}`);
    }
    return new FaultProxy(child, m[1]!, BigInt(m[2]!), lines);
  }

  get url(): string {
    return `http://${this.addr}`;
  }

  #command(cmd: string): Promise<string> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return Promise.reject(new Error(`faultproxy ${cmd}: the proxy exited`));
    return new Promise((res, rej) => {
      this.#waiting.push((line) => (line.startsWith("ok ") ? res(line) : rej(new Error(`faultproxy ${cmd}: ${line}`))));
      this.#child.stdin!.write(`${cmd}\n`);
    });
  }

  /** faults injects the next n faults of the seeded schedule, each after its pause; it resolves to the number injected (n). */
  async faults(n: number): Promise<number> {
    return Number((await this.#command(`faults ${n}`)).split(" ")[2]);
  }

  /** cut cuts every live connection; it resolves to how many it cut. */
  async cut(): Promise<number> {
    return Number((await this.#command("cut")).split(" ")[2]);
  }

  /** resume ends stalls and slowdowns now. */
  async resume(): Promise<void> {
    await this.#command("resume");
  }

  /** close ends the proxy and resolves to its counts (conns, cuts, …, faults) and the faults it injected. */
  async close(): Promise<{ stats: Record<string, number>; faults: string[] }> {
    if (this.#child.exitCode === null) this.#child.stdin!.end();
    await this.#exited;
    const stats: Record<string, number> = {};
    for (const [, k, v] of (this.#tail.find((l) => l.startsWith("stats ")) ?? "").matchAll(/(\S+)=(\d+)/g)) stats[k!] = Number(v);
    return { stats, faults: this.#tail.filter((l) => l.startsWith("fault ")).map((l) => l.slice(6)) };
  }
}

/** History records receipts and what consumers were given, as the JSON lines historycheck reads. */
export class History {
  readonly lines: string[] = [];

  published(epoch: bigint, seq: bigint, facts: number): void {
    this.lines.push(`{"kind":"published","epoch":"${formatEpoch(epoch)}","seq":${seq},"facts":${facts}}`);
  }

  consumer(name: string): ConsumerRecord {
    const c = JSON.stringify(name);
    this.lines.push(`{"kind":"consumer","consumer":${c}}`);
    return {
      fact: (epoch, seq, index) => this.lines.push(`{"kind":"fact","consumer":${c},"epoch":"${formatEpoch(epoch)}","seq":${seq},"index":${index}}`),
      resynced: (epoch, reason, requested, oldest, head) =>
        this.lines.push(
          `{"kind":"resync","consumer":${c},"epoch":"${formatEpoch(epoch)}","reason":${JSON.stringify(reason)},"requested":${requested},"oldest":${oldest},"head":${head}}`,
        ),
      restarted: () => this.lines.push(`{"kind":"restart","consumer":${c}}`),
    };
  }

  /** check runs historycheck (with --complete: every consumer ended with every fact of its epoch). */
  async check(complete: boolean): Promise<{ ok: boolean; output: string }> {
    const dir = mkdtempSync(join(tmpdir(), "ringcast-history-"));
    const file = join(dir, "history.jsonl");
    try {
      writeFileSync(file, this.lines.join("\n") + "\n");
      return await new Promise((res) => {
        execFile(ringtestTool("historycheck"), [...(complete ? ["--complete"] : []), file], (err, stdout, stderr) => {
          res({ ok: err === null, output: (stdout + stderr).trim() });
        });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** One consumer's record; reason is the proto name ("REASON_EPOCH_MISMATCH"). */
export interface ConsumerRecord {
  fact(epoch: bigint, seq: bigint, index: number): void;
  resynced(epoch: bigint, reason: string, requested: bigint, oldest: bigint, head: bigint): void;
  restarted(): void;
}

interface Position {
  epoch: bigint;
  seq: bigint;
}

/** A consumer's progress, as finish() and the scenarios watch it. */
export interface Consumer {
  readonly name: string;
  /** The last commit it was given whole. */
  at: Position | undefined;
  /** Facts given. */
  facts: number;
  /** Streams opened (RPC: "connecting" events; SSE: "open" events). */
  connects: number;
  /** Streams that ended with an OK status (RPC; a lease end, a drain). */
  cleanEnds: number;
  resyncs: number;
  restarts: number;
  /** The last connection state reported (RPC), for a failure's message. */
  state: string;
  /** It has ended (RPC: its loop returned; SSE: from the start, as closing it is synchronous). */
  ended: boolean;
}

/**
 * Run is one scenario: a server, the fault proxy in front of it, a
 * publisher straight to the server, consumers through the proxy, and the
 * history.
 */
export class Run {
  readonly hist = new History();
  readonly consumers: Consumer[] = [];
  readonly errors: string[] = [];
  #stopped = false;
  readonly #stop = new AbortController();
  readonly #sse: EventSource[] = [];
  #last: Position | undefined;
  #published = 0;
  /** Every receipt, by epoch then seq: its fact count. */
  readonly #receipts = new Map<bigint, Map<bigint, number>>();
  #publishing: Promise<void> | undefined;
  #stopPublishing = false;
  #paused: Promise<void> | undefined; // a restart in progress: no publish starts
  #inFlight: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly name: string,
    public srv: Server,
    readonly proxy: FaultProxy,
    readonly flags: string[],
  ) {}

  /**
   * start runs a server with flags behind a fault proxy with proxyFlags
   * for test t (its name goes into the replay line); when t ends, whatever
   * is left is stopped.
   */
  static async start(t: TestContext, flags: string[] = [], proxyFlags: string[] = []): Promise<Run> {
    // Every consumer connects from 127.0.0.1: no per-client stream bound.
    const all = ["--demo=false", "--window", "65536", "--heartbeat", "250ms", "--max-streams-per-client", "-1", ...flags];
    const srv = await startServer(all);
    let r: Run;
    try {
      r = new Run(t.name, srv, await FaultProxy.start(`127.0.0.1:${srv.port}`, proxyFlags), all);
    } catch (e) {
      await srv.kill();
      throw e;
    }
    t.after(() => r.close());
    return r;
  }

  /** close stops the consumers, the publisher, the proxy and the server (those two whatever happened before). */
  async close(): Promise<void> {
    try {
      await this.#stopConsumers();
      await this.#publishing;
    } finally {
      await this.proxy.close();
      await this.srv.kill();
    }
  }

  get seed(): bigint {
    return this.proxy.seed;
  }

  /** publish runs a publisher until finish(): commits of 1–4 facts, one every pauseMs, each with an idempotency key. */
  publish(pauseMs: number): void {
    const next = rng(this.seed, 2);
    // A fresh connection per publish: none kept from a server since restarted.
    const transport = createConnectTransport({ baseUrl: this.srv.url, httpVersion: "1.1", nodeOptions: { agent: false } });
    this.#publishing = (async () => {
      for (let n = 0; !this.#stopPublishing; n++) {
        await sleep(pauseMs);
        while (this.#paused) await this.#paused;
        if (this.#stopPublishing) return;
        const facts = Array.from({ length: 1 + Math.floor(next() * 4) }, (_, i) => ({
          topic: "faults/t",
          type: "fault.test",
          payload: { case: "data" as const, value: { n, i } },
        }));
        const p = publish(transport, facts, { idempotencyKey: `p-${n}`, attempts: 20, backoff: fastBackoff });
        this.#inFlight = p.catch(() => {});
        try {
          const res = await p;
          this.#receipt(res.instanceEpoch, res.seq, facts.length);
          this.#published++;
          this.#last = { epoch: res.instanceEpoch, seq: res.seq };
        } catch (e) {
          this.errors.push(`publish: ${String(e)}`);
          return;
        }
      }
    })();
  }

  /** consume starts perTransport consumers on each transport; with restartWithin > 0 each stops after 1..restartWithin facts and resumes from its persisted cursor text. */
  consume(perTransport: number, restartWithin = 0): void {
    for (const p of rpcProtocols) {
      for (let i = 0; i < perTransport; i++) {
        const name = `${p}-${i}`;
        const c: Consumer = { name, at: undefined, facts: 0, connects: 0, cleanEnds: 0, resyncs: 0, restarts: 0, state: "", ended: false };
        void this.#rpcConsumer(c, p, restartWithin, rng(this.seed, 100 + this.consumers.length)); // never rejects: it records errors
        this.consumers.push(c);
      }
    }
  }

  async #rpcConsumer(c: Consumer, p: Protocol, restartWithin: number, next: () => number): Promise<void> {
    const rec = this.hist.consumer(c.name);
    const { transport, close } = transportFor(p, this.proxy.url);
    let persisted: string | undefined; // the cursor as an application would store it
    try {
      while (!this.#stopped) {
        const limit = restartWithin > 0 ? 1 + Math.floor(next() * restartWithin) : 0;
        let facts = 0;
        const sub = subscribe(transport, {
          ...(persisted ? { cursor: persisted } : {}),
          backoff: fastBackoff,
          signal: this.#stop.signal,
          onConnection: (e) => {
            c.state = e.state;
            if (e.state === "connecting") c.connects++;
            if (e.state === "reconnecting" && e.error === undefined && !e.resync) c.cleanEnds++;
          },
        });
        for await (const it of sub) {
          if (it.kind === "fact") {
            rec.fact(it.epoch, it.seq, it.index);
            if (it.last) c.at = { epoch: it.epoch, seq: it.seq };
            facts++;
            c.facts++;
          } else if (it.kind === "resynced") {
            rec.resynced(it.epoch, `REASON_${it.reasonName}`, it.requestedSeq, it.oldestSeq, it.headSeq);
            c.resyncs++;
          }
          persisted = sub.cursorString();
          if (limit > 0 && facts >= limit) break;
        }
        if (!this.#stopped) {
          rec.restarted();
          c.restarts++;
        }
      }
    } catch (e) {
      if (!this.#stopped) this.errors.push(`${c.name}: ${String(e)}`);
    } finally {
      c.ended = true;
      close();
    }
  }

  /**
   * consumeSSE starts n EventSource consumers of GET /events through the
   * proxy. A gap repeated before any positioned event (a reconnect between
   * the gap and the snapshot's first event gets the same gap again, by the
   * same Last-Event-ID: docs/sse.md) is the same gap and recorded once.
   */
  consumeSSE(n: number): void {
    for (let i = 0; i < n; i++) {
      const c: Consumer = { name: `sse-${i}`, at: undefined, facts: 0, connects: 0, cleanEnds: 0, resyncs: 0, restarts: 0, state: "", ended: true };
      const rec = this.hist.consumer(c.name);
      const es = new EventSource(`${this.proxy.url}/events`);
      this.#sse.push(es);
      let gapAt: string | undefined; // the Last-Event-ID of the last gap, until a positioned event follows
      const parse = (e: MessageEvent) => sseMessage(String(e.data), e.lastEventId);
      const guard = (f: (e: MessageEvent) => void) => (e: MessageEvent) => {
        try {
          f(e);
        } catch (err) {
          this.errors.push(`${c.name}: ${e.type} ${JSON.stringify(e.data)}: ${String(err)}`);
        }
      };
      es.addEventListener("open", () => c.connects++);
      es.addEventListener(
        "commit",
        guard((e) => {
          const msg = parse(e);
          if (msg.event.case !== "commit") throw new Error("not a commit");
          for (const f of msg.event.value.facts) rec.fact(msg.instanceEpoch, msg.seq, f.index);
          c.facts += msg.event.value.facts.length;
          c.at = { epoch: msg.instanceEpoch, seq: msg.seq };
          gapAt = undefined;
        }),
      );
      for (const type of ["status", "progress"]) es.addEventListener(type, guard(() => (gapAt = undefined)));
      es.addEventListener(
        "gap",
        guard((e) => {
          const msg = parse(e);
          if (msg.event.case !== "gap") throw new Error("not a gap");
          if (gapAt !== undefined && gapAt === e.lastEventId) return;
          gapAt = e.lastEventId;
          const g = msg.event.value;
          rec.resynced(msg.instanceEpoch, `REASON_${reasonName(g.reason)}`, g.requestedSeq, g.oldestSeq, g.headSeq);
          c.resyncs++;
        }),
      );
      es.addEventListener("error", () => {
        if (es.readyState === EventSource.CLOSED && !this.#stopped) this.errors.push(`${c.name}: EventSource closed for good`);
      });
      this.consumers.push(c);
    }
  }

  /** everyConsumer waits (hang guard) until cond holds for every consumer. */
  async everyConsumer(what: string, cond: (c: Consumer) => boolean): Promise<void> {
    await until(
      () => this.errors.length > 0 || this.consumers.every(cond),
      catchUpGuardMs,
      () => `${what}: not yet ${this.consumers.filter((c) => !cond(c)).map((c) => c.name).join(", ")}`,
    );
    if (this.errors.length > 0) throw await this.#failure(this.errors.join("\n"));
  }

  #receipt(epoch: bigint, seq: bigint, facts: number): void {
    this.hist.published(epoch, seq, facts);
    let m = this.#receipts.get(epoch);
    if (!m) this.#receipts.set(epoch, (m = new Map()));
    m.set(seq, facts);
  }

  /**
   * carryOver records every commit published under epoch from as served
   * under epoch to too, at the same seq: a store rebuilt whole under a new
   * epoch serves them there.
   */
  carryOver(from: bigint, to: bigint): number {
    const old = this.#receipts.get(from) ?? new Map<bigint, number>();
    for (const [seq, facts] of old) this.#receipt(to, seq, facts);
    return old.size;
  }

  /**
   * restartServer stops the server (kill -9, or SIGTERM and a drain that
   * must exit 0), runs between (with the server stopped; none: nothing),
   * and starts a new instance on the same port, with no publish in flight.
   */
  async restartServer(how: "kill" | "drain", between?: () => void): Promise<void> {
    let resume!: () => void;
    this.#paused = new Promise((r) => (resume = r));
    try {
      await this.#inFlight;
      if (how === "kill") {
        await this.srv.kill();
      } else {
        const code = await this.srv.drain();
        if (code !== 0) this.errors.push(`ringcast serve after SIGTERM: exit code ${code}`);
      }
      between?.();
      this.srv = await startServer(this.flags, this.srv.port); // waits while the port is still in use
    } finally {
      this.#paused = undefined;
      resume();
    }
  }

  /**
   * finish stops the publisher, resumes the proxy, waits (hang guard)
   * until every consumer has been given the last published commit, stops
   * them and checks the history. On failure it throws with the seed, the
   * line that replays it, and the checker's excerpt.
   */
  async finish(): Promise<{ summary: string; stats: Record<string, number>; faults: string[] }> {
    try {
      this.#stopPublishing = true;
      await this.#publishing;
      await this.proxy.resume();
      const last = this.#last;
      if (this.errors.length === 0 && this.#published === 0) this.errors.push("nothing was published");
      if (last) {
        await this.everyConsumer(`every consumer given the last commit ${formatEpoch(last.epoch)}/${last.seq}`, (c) => c.at?.epoch === last.epoch && c.at.seq === last.seq);
      }
      await this.#stopConsumers();
      if (this.errors.length > 0) throw await this.#failure(this.errors.join("\n"));
      const res = await this.hist.check(true);
      if (!res.ok) throw await this.#failure(res.output, true);
      const { stats, faults } = await this.proxy.close();
      return { summary: res.output, stats, faults };
    } finally {
      await this.close();
    }
  }

  /**
   * #stopConsumers aborts the consumers' signal and waits until they have
   * ended (hang guard): one that has not is an error naming it and its last
   * connection state, not a wait without end.
   */
  async #stopConsumers(): Promise<void> {
    this.#stopped = true;
    this.#stopPublishing = true;
    this.#stop.abort();
    for (const es of this.#sse) es.close();
    const running = () => this.consumers.filter((c) => !c.ended);
    try {
      await until(() => running().length === 0, stopGuardMs, () => "");
    } catch {
      const names = running().map((c) => `${c.name} (last state ${c.state || "none"}, ${c.connects} connects)`);
      if (!this.errors.some((e) => e.startsWith("still running"))) this.errors.push(`still running after their signal was aborted: ${names.join(", ")}`);
    }
  }

  /** #failure is the error to throw: what failed, the history so far (unless checked already), the seed and its replay. */
  async #failure(what: string, checked = false): Promise<Error> {
    await this.#stopConsumers();
    let msg = what;
    if (!checked) {
      const res = await this.hist.check(false);
      msg += `\nhistory so far: ${res.output}`;
    }
    const seed = this.seed;
    msg +=
      `\nfault schedule seed ${seed}; replay: RINGCAST_FAULT_SEED=${seed} ` +
      `node --import tsx --test --test-name-pattern='^${this.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/'/g, ".")}$' test/faults.test.ts (in clients/ts)`;
    return new Error(msg);
  }
}
