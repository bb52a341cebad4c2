#!/usr/bin/env node
// Builds the web console (server/internal/ops/console/web) into server/internal/ops/console/dist,
// which server/internal/ops/console embeds. esbuild's output is deterministic for fixed
// inputs and options, so the committed dist can be checked for staleness:
//
//   node clients/ts/scripts/build-console.mjs            build into server/internal/ops/console/dist
//   node clients/ts/scripts/build-console.mjs --check    rebuild into a temp dir; exit 1 if it differs
//   node clients/ts/scripts/build-console.mjs --outdir D build into D
import { createHash } from "node:crypto";
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const web = join(root, "server/internal/ops/console/web");
const committed = join(root, "server/internal/ops/console/dist");

const args = process.argv.slice(2);
const check = args.includes("--check");
const oi = args.indexOf("--outdir");
const outdir = check ? mkdtempSync(join(tmpdir(), "ringcast-console-")) : oi >= 0 ? resolve(args[oi + 1] ?? "") : committed;

try {
  await build(outdir);
  if (check) {
    const diff = compare(committed, outdir);
    if (diff.length > 0) {
      console.error("server/internal/ops/console/dist is stale; run `npm run build:console` (in clients/ts) and commit it:");
      for (const d of diff) console.error("  " + d);
      process.exitCode = 1;
    } else {
      console.log("server/internal/ops/console/dist is up to date");
    }
  } else {
    console.log(`console built into ${relative(process.cwd(), outdir) || "."}`);
  }
} finally {
  if (check) rmSync(outdir, { recursive: true, force: true });
}

async function build(out) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, "assets"), { recursive: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [join(web, "main.ts"), join(web, "styles.css")],
    outdir: join(out, "assets"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["es2022", "chrome111", "firefox113", "safari16.4"],
    minify: true,
    sourcemap: false,
    legalComments: "none",
    charset: "utf8",
    write: false,
    logLevel: "warning",
    tsconfig: join(web, "tsconfig.json"),
    nodePaths: [join(root, "clients/ts/node_modules"), join(root, "node_modules")],
  });
  // Name each output by its content (not by esbuild's hash, which also
  // covers input paths), so the same sources give the same dist anywhere.
  const names = {};
  for (const f of result.outputFiles) {
    const base = f.path.split(/[\\/]/).pop();
    const dot = base.lastIndexOf(".");
    const hash = createHash("sha256").update(f.contents).digest("hex").slice(0, 10);
    const name = `${base.slice(0, dot)}-${hash}${base.slice(dot)}`;
    writeFileSync(join(out, "assets", name), f.contents);
    names[base] = `/assets/${name}`;
  }
  let html = readFileSync(join(web, "index.html"), "utf8");
  html = html.replace(/\{\{([\w.-]+)\}\}/g, (m, name) => {
    if (!names[name]) throw new Error(`index.html: no built asset for ${m}`);
    return names[name];
  });
  writeFileSync(join(out, "index.html"), html);
}

function listFiles(dir, base = dir) {
  let out = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out = out.concat(listFiles(p, base));
    else out.push(relative(base, p));
  }
  return out.sort();
}

function compare(a, b) {
  const fa = listFiles(a);
  const fb = listFiles(b);
  const diff = [];
  const hash = (p) => createHash("sha256").update(readFileSync(p)).digest("hex");
  for (const f of fa) if (!fb.includes(f)) diff.push(`only in the committed dist: ${f}`);
  for (const f of fb) {
    if (!fa.includes(f)) diff.push(`missing from the committed dist: ${f}`);
    else if (hash(join(a, f)) !== hash(join(b, f))) diff.push(`differs: ${f}`);
  }
  return diff;
}
