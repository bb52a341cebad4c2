// The published package, as an application gets it: `npm pack` the client,
// install the tarball into a fresh project next to @connectrpc/connect-node
// and @connectrpc/connect-web (from the npm cache when it has them), check
// that the tree holds one @connectrpc/connect, then
//   (a) run a Node consumer (gRPC) against a real server,
//   (b) type-check a TypeScript consumer against the shipped declarations,
//   (c) bundle a browser consumer with esbuild and run it in Chromium over
//       gRPC-Web.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { build } from "esbuild";
import { chromium } from "playwright-core";

import { repoRoot, startServer, type Server } from "../harness.js";

const pkgDir = join(repoRoot, "clients/ts");
const executablePath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 300_000 });
  } catch (e) {
    const out = (e as { stdout?: string }).stdout ?? "";
    throw new Error(`${cmd} ${args.join(" ")} failed: ${String(e)}\n${out}`);
  }
}

/** copies finds every installed copy of package name under dir/node_modules. */
function copies(dir: string, name: string): string[] {
  const found: string[] = [];
  const walk = (nm: string) => {
    if (!existsSync(nm)) return;
    if (existsSync(join(nm, name, "package.json"))) found.push(join(nm, name));
    for (const e of readdirSync(nm, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name.startsWith("@")) {
        for (const s of readdirSync(join(nm, e.name), { withFileTypes: true })) {
          if (s.isDirectory()) walk(join(nm, e.name, s.name, "node_modules"));
        }
      } else {
        walk(join(nm, e.name, "node_modules"));
      }
    }
  };
  walk(join(dir, "node_modules"));
  return found;
}

const nodeConsumer = `
import { subscribe, publishBatch } from "@ringcast/client";
import { createGrpcTransport } from "@connectrpc/connect-node";

const transport = createGrpcTransport({ baseUrl: process.argv[2] });
const [receipt] = await publishBatch(transport, [{ facts: [{ topic: "pkg/node", type: "pkg.test", payload: { case: "data", value: { from: "node" } } }] }]);
const facts = [];
for await (const item of subscribe(transport, { topics: ["pkg/node"], endAtHead: true })) {
  if (item.kind === "fact") facts.push({ seq: String(item.seq), topic: item.topic, data: item.data });
}
console.log(JSON.stringify({ receiptSeq: String(receipt.seq), facts }));
`;

const tsConsumer = `
import { subscribe, formatCursor, publishBatch, FactSchema, CommitSchema, EventService, type Fact, type Commit, type StreamItem, type Subscription } from "@ringcast/client";
import { create, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";

const fact: Fact = create(FactSchema, { topic: "pkg/ts", type: "pkg.test", payload: { case: "data", value: { from: "ts" } } });
export const json: unknown = toJson(CommitSchema, create(CommitSchema, { facts: [fact] }) satisfies Commit);
export const publishOne = (t: Parameters<typeof publishBatch>[0]) => createClient(EventService, t).publish({ facts: [fact] });

const sub: Subscription = subscribe(createConnectTransport({ baseUrl: "http://127.0.0.1:8080" }), { endAtHead: true, untilSeq: 10n });
export async function first(): Promise<string> {
  for await (const item of sub) {
    const it: StreamItem = item;
    if (it.kind === "fact") return it.topic + formatCursor(sub.cursor);
  }
  return "";
}
`;

// exportsConsumer imports the package as a consumer does and prints what
// resolved: the client's functions, the generated service and schemas, and
// whether a path the package does not export is refused.
const exportsConsumer = `
import * as rc from "@ringcast/client";
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import { createRequire } from "node:module";

const fact = create(rc.FactSchema, { topic: "pkg/exports", type: "pkg.test" });
const back = fromBinary(rc.FactSchema, toBinary(rc.FactSchema, fact));
let deep = "resolved";
try {
  await import("@ringcast/client/dist/index.js");
} catch (e) {
  deep = e.code;
}
console.log(JSON.stringify({
  names: Object.keys(rc).sort(),
  roundTrip: back.topic,
  service: rc.EventService.typeName,
  packageJson: createRequire(import.meta.url)("@ringcast/client/package.json").name,
  deep,
}));
`;

const browserConsumer = `
import { subscribe, publishBatch } from "@ringcast/client";
import { createGrpcWebTransport } from "@connectrpc/connect-web";

const transport = createGrpcWebTransport({ baseUrl: location.origin });
try {
  await publishBatch(transport, [{ facts: [{ topic: "pkg/browser", type: "pkg.test", payload: { case: "data", value: { from: "browser" } } }] }]);
  const facts = [];
  for await (const item of subscribe(transport, { topics: ["pkg/browser"], endAtHead: true })) {
    if (item.kind === "fact") facts.push({ topic: item.topic, data: item.data });
  }
  window.__result = { facts };
} catch (e) {
  window.__result = { error: String(e) };
}
`;

describe("the packed @ringcast/client", () => {
  let dir = "";
  let app = "";
  let tarballFiles: string[] = [];
  let server: Server;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ringcast-package-test-"));
    const tarball = run("npm", ["pack", "--silent", "--pack-destination", dir], pkgDir).trim().split("\n").pop()!;
    tarballFiles = run("tar", ["-tzf", join(dir, tarball)], dir).trim().split("\n").sort();
    app = join(dir, "app");
    execFileSync("mkdir", [app]);
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({
        name: "ringcast-package-test",
        private: true,
        type: "module",
        dependencies: {
          "@ringcast/client": `file:../${tarball}`,
          "@bufbuild/protobuf": "2.17.0",
          "@connectrpc/connect": "2.2.0",
          "@connectrpc/connect-node": "2.2.0",
          "@connectrpc/connect-web": "2.2.0",
        },
      }),
    );
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], app);
    server = await startServer(["--demo=false"]);
  });

  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("ships only what a consumer needs", () => {
    // package.json, README.md, LICENSE and dist/: no sources, scripts,
    // tests, tsconfig or source maps.
    const extra = tarballFiles.filter((f) => !/^package\/(package\.json|README\.md|LICENSE|dist\/.+\.(js|d\.ts))$/.test(f));
    assert.deepEqual(extra, [], "files the tarball should not ship");
    for (const f of ["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts", "dist/gen/ringcast/v1/ringcast_pb.js", "dist/gen/ringcast/v1/ringcast_pb.d.ts", "dist/gen/buf/validate/validate_pb.js"]) {
      assert.ok(tarballFiles.includes(`package/${f}`), `the tarball lacks ${f}`);
    }
    // Each of the client's modules comes with its declarations.
    for (const f of tarballFiles.filter((f) => f.endsWith(".js") && !f.includes("/buf/validate/"))) {
      assert.ok(tarballFiles.includes(f.replace(/\.js$/, ".d.ts")), `${f} has no .d.ts`);
    }
  });

  it("resolves the exports a consumer names", () => {
    writeFileSync(join(app, "exports-consumer.mjs"), exportsConsumer);
    const out = JSON.parse(run(process.execPath, ["exports-consumer.mjs"], app)) as { names: string[]; roundTrip: string; service: string; packageJson: string; deep: string };
    const schemas = [...readFileSync(join(repoRoot, "gen/ts/ringcast/v1/ringcast_pb.ts"), "utf8").matchAll(/^export const (\w+Schema)\b/gm)].map((m) => m[1]!);
    assert.ok(schemas.includes("FactSchema"), "no FactSchema in the generated code");
    const want = ["subscribe", "Subscription", "publish", "publishBatch", "formatCursor", "parseCursor", "reasonName", "EventService", "Snapshot", "Reason", ...schemas];
    assert.deepEqual(want.filter((n) => !out.names.includes(n)), [], "names the package does not export");
    assert.equal(out.roundTrip, "pkg/exports");
    assert.equal(out.service, "ringcast.v1.EventService");
    assert.equal(out.packageJson, "@ringcast/client");
    assert.equal(out.deep, "ERR_PACKAGE_PATH_NOT_EXPORTED");
  });

  it("installs with one @connectrpc/connect and no protovalidate", () => {
    assert.equal(copies(app, "@connectrpc/connect").length, 1, `copies: ${copies(app, "@connectrpc/connect").join(", ")}`);
    assert.deepEqual(copies(app, "@bufbuild/protovalidate"), []);
  });

  it("runs a Node consumer over gRPC", () => {
    writeFileSync(join(app, "node-consumer.mjs"), nodeConsumer);
    const out = JSON.parse(run(process.execPath, ["node-consumer.mjs", server.url], app)) as { receiptSeq: string; facts: { seq: string; topic: string; data: unknown }[] };
    assert.deepEqual(out.facts, [{ seq: out.receiptSeq, topic: "pkg/node", data: { from: "node" } }]);
  });

  it("type-checks a TypeScript consumer against the shipped declarations", () => {
    writeFileSync(join(app, "consumer.ts"), tsConsumer);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, lib: ["ES2022", "DOM"], types: [] }, files: ["consumer.ts"] }),
    );
    const tsc = createRequire(join(pkgDir, "package.json")).resolve("typescript/bin/tsc"); // the client's own TypeScript
    run(process.execPath, [tsc, "-p", "tsconfig.json"], app);
  });

  it("bundles a browser consumer with esbuild and runs it in Chromium over gRPC-Web", async (t) => {
    if (!existsSync(executablePath)) {
      t.skip(`no Chromium at ${executablePath} (go tool task deps:chromium)`);
      return;
    }
    writeFileSync(join(app, "browser.js"), browserConsumer);
    const bundle = await build({ entryPoints: [join(app, "browser.js")], absWorkingDir: app, bundle: true, format: "esm", platform: "browser", target: "es2022", write: false, logLevel: "silent" });
    const js = bundle.outputFiles[0]!.text;
    const browser = await chromium.launch({
      executablePath,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    try {
      const page = await browser.newPage();
      // The page is served at the server's origin, so gRPC-Web calls are same-origin.
      const pageUrl = `${server.url}/__package-test.html`;
      await page.route(pageUrl, (route) => route.fulfill({ contentType: "text/html", body: `<!doctype html><title>package test</title><script type="module">${js.replaceAll("</script", "<\\/script")}</script>` }));
      await page.goto(pageUrl);
      await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, undefined, { timeout: 30_000 });
      const result = await page.evaluate(() => (window as unknown as { __result: unknown }).__result);
      assert.deepEqual(result, { facts: [{ topic: "pkg/browser", data: { from: "browser" } }] });
    } finally {
      await browser.close();
    }
  });
});
