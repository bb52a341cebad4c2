// The web console against a server that requires tokens (--auth jwt), in a
// real Chromium: it asks for a token instead of retrying, says plainly when
// a token does not grant the gauges, takes #token=… from the address (and
// removes it from there), and keeps the token in sessionStorage.
//
// Without a runnable Chromium the test skips locally and FAILS under CI (CI=true).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import type { Browser } from "playwright-core";

import { repoRoot, serverBinary, startServer, type Server } from "../harness.js";
import { axe, launch, waitFor } from "./chromium.js";

const inCI = process.env["CI"] === "true";
const resultsDir = join(repoRoot, "test-results", "console");

describe("web console with --auth jwt", () => {
  let browser: Browser | undefined;
  let unavailable: string | undefined;
  let srv: Server | undefined;
  let dir: string;
  let keyFile: string;
  const mint = (...grants: string[]) =>
    execFileSync(serverBinary(), ["token", "--key-file", keyFile, "--sub", "console-test", "--ttl", "10m", ...grants], { encoding: "utf8" }).trim();

  before(async () => {
    const b = await launch();
    if (typeof b === "string") {
      unavailable = b;
      return;
    }
    browser = b;
    mkdirSync(resultsDir, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), "ringcast-console-auth-"));
    keyFile = join(dir, "hmac.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    srv = await startServer(["--demo", "--demo-interval", "200ms", "--auth", "jwt", "--jwt-key-file", keyFile]);
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("asks for a token, says 'not authorised' for one without the gauges, and goes live with a good one", async (t) => {
    if (unavailable !== undefined) {
      if (inCI) assert.fail(`CI=true and ${unavailable}`);
      t.skip(unavailable);
      return;
    }
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(srv!.url + "/");
    await page.evaluate(() => {
      const w = window as unknown as { statusLog: string[] };
      w.statusLog = [];
      const e = document.querySelector("[data-testid=stream-status]")!;
      new MutationObserver(() => w.statusLog.push(e.textContent ?? "")).observe(e, { childList: true, characterData: true, subtree: true });
    });

    await waitFor(page, () => !(document.querySelector("[data-testid=auth]") as HTMLElement).hidden, null, "the token prompt");
    assert.equal(await page.locator("#auth-title").textContent(), "This server requires an access token");
    assert.match((await page.locator("[data-testid=stream-status]").textContent()) ?? "", /stopped/);
    assert.match((await page.locator("#outage").textContent()) ?? "", /Not authorised/);
    assert.ok(await page.locator("[data-testid=reconnect-now]").isHidden(), "no retry to offer");
    await page.screenshot({ path: join(resultsDir, "auth-prompt.png") });
    await axe(page, "token prompt");

    // A valid token that does not grant the gauges: plainly not authorised, no retry loop.
    await page.locator("#auth-token").fill(mint("--subscribe", "alerts"));
    await page.locator("#auth-form button[type=submit]").click();
    await waitFor(page, () => /does not allow reading the gauges/.test(document.getElementById("auth-title")?.textContent ?? "") && !(document.getElementById("auth") as HTMLElement).hidden, null, "not authorised");
    assert.match((await page.locator("[data-testid=stream-status]").textContent()) ?? "", /stopped/);
    const log = await page.$$eval("#log .ev-text", (es) => es.map((e) => e.textContent ?? ""));
    assert.equal(log.filter((l) => l === "Not authorised").length, 2, `one refusal per attempt: ${log.join(" | ")}`);
    assert.ok(!log.some((l) => l.startsWith("Connection lost")), "a refusal is not retried as a lost connection");

    const good = mint("--subscribe", "*");
    await page.locator("#auth-token").fill(good);
    await page.keyboard.press("Enter");
    await waitFor(page, () => /live/.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? "") && document.querySelectorAll("#board [data-gauge-key]").length >= 12, null, "live with the token");
    assert.ok(await page.locator("[data-testid=auth]").isHidden());
    assert.ok(await page.locator("#outage").isHidden());
    assert.equal(await page.evaluate(() => JSON.parse(sessionStorage.getItem("ringcast.console.token") ?? "null")), good, "kept for this tab");
    // The sparklines' history read carries the token too.
    await waitFor(page, () => [...document.querySelectorAll<SVGElement>("#board [data-gauge-key] .g-spark")].every((s) => Number(s.dataset["points"]) >= 2), null, "sparklines");
    assert.deepEqual(errors, []);
    await page.close();

    // #token=… in the address: used, kept, and taken out of the address.
    const ctx = await browser!.newContext();
    const p2 = await ctx.newPage();
    await p2.goto(`${srv!.url}/#token=${encodeURIComponent(good)}`);
    await waitFor(p2, () => /live/.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, "live from the fragment's token");
    assert.equal(await p2.evaluate(() => window.location.hash), "", "the token left the address bar");
    assert.ok(await p2.locator("[data-testid=auth]").isHidden(), "no prompt");
    await ctx.close();
  });
});
