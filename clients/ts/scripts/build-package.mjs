// Builds the publishable package into a flat dist/:
//
//   dist/index.js, index.d.ts, subscribe.js, …        (from src/)
//   dist/gen/ringcast/v1/ringcast_pb.js, .d.ts         (from gen/ts/)
//   dist/gen/buf/validate/validate_pb.js               (the protovalidate descriptor
//                                                       ringcast_pb.js imports, so that
//                                                       no runtime dependency is needed for it)
//
// tsc compiles src/ and the generated code it imports (rootDir ../..) into a
// temporary directory; this script moves the files into place and rewrites
// the import specifiers that crossed directories. No source maps: the
// sources are not shipped.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(pkg, "dist");
const tmp = mkdtempSync(join(tmpdir(), "ringcast-client-build-"));
try {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(pkg, "tsconfig.build.json"), "--outDir", tmp], { stdio: "inherit" });
  rmSync(dist, { recursive: true, force: true });
  cpSync(join(tmp, "clients/ts/src"), dist, { recursive: true });
  mkdirSync(join(dist, "gen/ringcast/v1"), { recursive: true });
  for (const f of ["ringcast_pb.js", "ringcast_pb.d.ts"]) {
    cpSync(join(tmp, "gen/ts/ringcast/v1", f), join(dist, "gen/ringcast/v1", f));
  }
  const validate = createRequire(import.meta.url).resolve("@bufbuild/protovalidate/gen/buf/validate/validate_pb.js");
  mkdirSync(join(dist, "gen/buf/validate"), { recursive: true });
  cpSync(validate.replace(/\/cjs\//, "/esm/"), join(dist, "gen/buf/validate/validate_pb.js"));

  const rewrites = [
    ["../../../gen/ts/ringcast/v1/ringcast_pb.js", "./gen/ringcast/v1/ringcast_pb.js"],
    ["@bufbuild/protovalidate/gen/buf/validate/validate_pb.js", "../../buf/validate/validate_pb.js"],
  ];
  for (const file of walk(dist)) {
    let text = readFileSync(file, "utf8");
    for (const [from, to] of rewrites) text = text.replaceAll(`"${from}"`, `"${to}"`);
    if (/"\.\.\/\.\.\/\.\.\/|@bufbuild\/protovalidate/.test(text)) {
      throw new Error(`${file} still imports outside the package`);
    }
    writeFileSync(file, text);
  }
  console.log(`built ${dist}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

function* walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (/\.(js|d\.ts)$/.test(e.name)) yield p;
  }
}
