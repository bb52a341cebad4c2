// Fails, with a one-line reason, when the running Node is older than the
// workspace's engines.node (package.json at the repository root, the one
// place the version is stated). The dev tooling (connect-node, eventsource,
// protoc-gen-es, the browser test's axe-core) declares that minimum; npm
// only warns about it (EBADENGINE), so `go tool task test` checks it first.
// Written for any Node that may run it: no syntax newer than ES2017.
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const want = ((pkg.engines || {}).node || "").trim();
const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(want);
if (!m) {
  console.error(`package.json engines.node is ${JSON.stringify(want)}: tools/check-node.mjs reads only ">=MAJOR[.MINOR[.PATCH]]"`);
  process.exit(2);
}
const need = [m[1], m[2] || "0", m[3] || "0"].map(Number);
const have = process.versions.node.split(".").map(Number);
let older = false;
for (let i = 0; i < 3; i++) {
  if (have[i] !== need[i]) {
    older = have[i] < need[i];
    break;
  }
}
if (older) {
  console.error(`Node ${process.versions.node} is older than the ${want} this repository's tooling needs (package.json engines.node): install Node ${need.join(".")} or newer`);
  process.exit(1);
}
