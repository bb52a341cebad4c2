// Test harness: a real ringcast server process on loopback, and a client
// transport per protocol.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { create } from "@bufbuild/protobuf";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import {
  Http2SessionManager,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { createConnectTransport as createWebConnectTransport, createGrpcWebTransport as createWebGrpcWebTransport } from "@connectrpc/connect-web";

import { EventService, FactSchema } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import type { StreamItem } from "../src/index.js";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/**
 * serverBinary builds server/cmd/ringcast once per test run (test files of
 * one `node --test` run share the runner as parent process) into a temp dir.
 */
export function serverBinary(): string {
  const fromEnv = process.env["RINGCAST_BIN"];
  if (fromEnv) {
    return fromEnv;
  }
  const dir = join(tmpdir(), `ringcast-ts-test-${process.ppid}`);
  const bin = join(dir, "ringcast");
  if (!existsSync(bin)) {
    removeStaleBuilds();
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    execFileSync("go", ["build", "-o", tmp, "./server/cmd/ringcast"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
    renameSync(tmp, bin);
  }
  return bin;
}

/**
 * ringtestTool returns the path of a Go test tool, building both
 * (server/internal/testkit/faultproxy/cmd/faultproxy and
 * server/internal/testkit/history/cmd/historycheck, with one `go build`) once per
 * test run, next to the server binary.
 */
export function ringtestTool(name: "faultproxy" | "historycheck"): string {
  const dir = join(tmpdir(), `ringcast-ts-test-${process.ppid}`);
  if (!existsSync(join(dir, "historycheck"))) {
    const tmp = join(dir, `tools.${process.pid}.tmp`);
    mkdirSync(tmp, { recursive: true });
    const pkgs = ["./server/internal/testkit/faultproxy/cmd/faultproxy", "./server/internal/testkit/history/cmd/historycheck"];
    execFileSync("go", ["build", "-o", tmp + "/", ...pkgs], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
    // historycheck last: its presence means both are in place.
    for (const tool of ["faultproxy", "historycheck"]) renameSync(join(tmp, tool), join(dir, tool));
    rmSync(tmp, { recursive: true, force: true });
  }
  return join(dir, name);
}

/** removeStaleBuilds deletes the binaries of earlier runs whose runner has exited. */
function removeStaleBuilds(): void {
  for (const name of readdirSync(tmpdir())) {
    const m = /^ringcast-ts-test-(\d+)$/.exec(name);
    if (!m || Number(m[1]) === process.ppid) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") {
        rmSync(join(tmpdir(), name), { recursive: true, force: true });
      }
    }
  }
}

export interface Server {
  readonly url: string;
  readonly port: number;
  readonly epoch: bigint;
  /** SIGTERM and wait for the exit (SIGKILL after 1.5 s). */
  stop(): Promise<void>;
  /** stop, then start again on the same port (a new epoch), with these flags (default: the same). */
  restart(flags?: string[]): Promise<Server>;
  /** SIGKILL (no DRAINING, no goodbye: connections just break) and wait for the exit. */
  kill(): Promise<void>;
  /**
   * SIGTERM and wait for the exit however long the drain takes (hang guard:
   * SIGKILL after 60 s); resolves to the exit code (null when a signal ended it).
   */
  drain(): Promise<number | null>;
}

/**
 * startServer runs `ringcast serve --addr 127.0.0.1:<port>` with extra flags
 * (port 0: one of its own). A given port is one a server ran on before, and
 * may still be in use (by the old process, or by a connection that took it
 * meanwhile): while the process exits saying so, it starts it again, every
 * 150 ms for up to 15 s.
 */
export async function startServer(flags: string[] = [], port = 0): Promise<Server> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await spawnServer(flags, port);
    } catch (err) {
      if (port === 0 || !String(err).includes("address already in use")) throw err;
      if (Date.now() > deadline) throw new Error(`port ${port} is still in use after 15 s: ${String(err)}`);
      await new Promise((res) => setTimeout(res, 150));
    }
  }
}

/** spawnServer starts the process once and waits until it logs its url. */
async function spawnServer(flags: string[], port: number): Promise<Server> {
  const bin = serverBinary();
  const child = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`, ...flags], { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)));
  const line = await firstLine(child, /url=(\S+).*?epoch=([0-9a-f]{16})|epoch=([0-9a-f]{16}).*?url=(\S+)/);
  const url = (line[1] ?? line[4])!.replace(/^"|"$/g, "");
  const epoch = BigInt("0x" + (line[2] ?? line[3])!);
  const boundPort = Number(new URL(url).port);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      // Streams end at once on SIGTERM (DRAINING); what can linger is an
      // idle keep-alive connection the server waits out for its shutdown
      // grace (fetch leaves one behind after an abort). Do not wait for it.
      const killer = setTimeout(() => child.kill("SIGKILL"), 1_500);
      await exited;
      clearTimeout(killer);
    }
    await exited;
  };
  return {
    url,
    port: boundPort,
    epoch,
    stop,
    async restart(next?: string[]) {
      await stop();
      return startServer(next ?? flags, boundPort);
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async drain() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        await exited;
        clearTimeout(killer);
      }
      return exited;
    },
  };
}

function firstLine(child: ChildProcess, re: RegExp): Promise<RegExpExecArray> {
  return new Promise((res, rej) => {
    let buf = "";
    const timer = setTimeout(() => rej(new Error(`server did not log its url; stderr so far:\n${buf}`)), 20_000);
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      buf += chunk;
      const m = re.exec(buf);
      if (m) {
        clearTimeout(timer);
        res(m);
      }
    });
    // "close", not "exit": only then has all of stderr been read.
    child.once("close", (code) => {
      clearTimeout(timer);
      rej(new Error(`server exited (${code}) before logging its url:\n${buf}`));
    });
  });
}

/**
 * The transports under test: connect-node's gRPC (HTTP/2), gRPC-Web and
 * Connect (HTTP/1.1), and connect-web's fetch-based gRPC-Web and Connect
 * transports (the browser ones; Node 20 has fetch with streaming bodies).
 */
export type Protocol = "grpc" | "grpcweb" | "connect" | "web-grpcweb" | "web-connect";
export const protocols: readonly Protocol[] = ["grpc", "grpcweb", "connect", "web-grpcweb", "web-connect"];

/** A transport per protocol; close() releases HTTP/2 sessions. */
export function transportFor(p: Protocol, baseUrl: string): { transport: Transport; close(): void } {
  switch (p) {
    case "grpc": {
      const sessionManager = new Http2SessionManager(baseUrl);
      return { transport: createGrpcTransport({ baseUrl, sessionManager }), close: () => sessionManager.abort() };
    }
    case "grpcweb":
      return { transport: createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }), close: () => {} };
    case "connect":
      return { transport: createConnectTransport({ baseUrl, httpVersion: "1.1" }), close: () => {} };
    case "web-grpcweb":
      return { transport: createWebGrpcWebTransport({ baseUrl }), close: () => {} };
    case "web-connect":
      return { transport: createWebConnectTransport({ baseUrl }), close: () => {} };
  }
}

/** publish appends one commit of facts (topic, type, key, data) over Connect. */
export async function publish(baseUrl: string, facts: { topic: string; type: string; key?: string; data: JsonObject }[]): Promise<bigint> {
  // agent: false: a fresh connection each time. Node's global agent keeps
  // connections alive, and one kept from a server that has since been
  // restarted on the same port would fail with "socket hang up".
  const client = createClient(EventService, createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { agent: false } }));
  const res = await client.publish({
    facts: facts.map((f) => create(FactSchema, { topic: f.topic, type: f.type, key: f.key ?? "", payload: { case: "data", value: f.data } })),
  });
  return res.seq;
}

/** withTimeout rejects when p does not settle within ms. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * readUntilEnd reads sub until a fact of type "x.end": the facts' labels
 * (`seq/index`, `$` on a commit's last fact) and every item kind seen.
 */
export async function readUntilEnd(sub: AsyncIterable<StreamItem>): Promise<{ got: string[]; kinds: Set<string> }> {
  const got: string[] = [];
  const kinds = new Set<string>();
  for await (const item of sub) {
    kinds.add(item.kind);
    if (item.kind !== "fact") continue;
    got.push(`${item.seq}/${item.index}${item.last ? "$" : ""}`);
    if (item.type === "x.end") break;
  }
  return { got, kinds };
}
