// The web console in a real Chromium (Debian's /usr/bin/chromium through
// playwright-core): gauges appear and move, and a server restart shows as
// "resynced" and then "live" with the gauges still populated; and Chromium's
// native EventSource resumes /events by its own Last-Event-ID across leases.
// Screenshots go to test-results/ at the repository root.
//
// Without a runnable Chromium the test skips locally and FAILS under CI
// (CI=true). CHROMIUM_PATH overrides /usr/bin/chromium.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { chromium, type Browser, type Page } from "playwright-core";

import { formatEpoch } from "../../src/index.js";
import { publish, repoRoot, startServer, type Server } from "../harness.js";

const executablePath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const inCI = process.env["CI"] === "true";
const resultsDir = join(repoRoot, "test-results");

async function launch(): Promise<Browser | string> {
  if (!existsSync(executablePath)) {
    return `no Chromium at ${executablePath} (apt-get install -y chromium)`;
  }
  try {
    return await chromium.launch({
      executablePath,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  } catch (e) {
    return `Chromium at ${executablePath} does not start: ${e instanceof Error ? e.message : String(e)}`;
  }
}

const levels = (page: Page) =>
  page.$$eval("[data-gauge-key]", (els) => Object.fromEntries(els.map((e) => [(e as HTMLElement).dataset["gaugeKey"], e.querySelector(".g-value")?.textContent ?? ""])));

describe("web console in Chromium", () => {
  let browser: Browser | undefined;
  let unavailable: string | undefined;
  let srv: Server;

  before(async () => {
    const b = await launch();
    if (typeof b === "string") {
      unavailable = b;
      return;
    }
    browser = b;
    srv = await startServer(["--demo-interval", "200ms"]);
    mkdirSync(resultsDir, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  it("shows live gauges and recovers from a server restart", async (t) => {
    if (unavailable !== undefined) {
      if (inCI) assert.fail(`CI=true and ${unavailable}`);
      t.skip(unavailable);
      return;
    }
    const page = await browser!.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(srv.url + "/");

    const status = page.locator("[data-testid=stream-status]");
    await page.waitForFunction(() => /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, { timeout: 15_000 });
    // All twelve demo gauges, grouped by catchment, each showing its level.
    await page.waitForFunction(() => document.querySelectorAll("[data-gauge-key]").length >= 12, null, { timeout: 10_000 });
    assert.deepEqual(await page.$$eval(".catchment h2", (hs) => hs.map((h) => h.textContent)), ["Eden", "Lune", "Ribble", "Wyre"]);
    const cards = await page.$$eval("[data-gauge-key]", (els) =>
      els.map((e) => ({ key: (e as HTMLElement).dataset["gaugeKey"], level: e.querySelector(".g-value")?.textContent ?? "", text: e.textContent ?? "" })),
    );
    for (const c of cards) {
      assert.match(c.level, /^\d+\.\d{3}$/, `gauge ${c.key} shows a level`);
      assert.ok(c.text.includes(c.level), `gauge ${c.key}'s text contains its level`);
    }
    const first = await levels(page);
    // State is shown by colour too: the card's stripe uses the state colour.
    const stripe = await page.$eval("[data-gauge-key]", (e) => getComputedStyle(e, "::before").backgroundColor);
    assert.notEqual(stripe, "rgba(0, 0, 0, 0)");

    // Levels move as the feed publishes (every 200 ms).
    await page.waitForFunction(
      (before) => {
        let changed = 0;
        for (const e of document.querySelectorAll<HTMLElement>("[data-gauge-key]")) {
          if (e.querySelector(".g-value")?.textContent !== before[e.dataset["gaugeKey"]!]) changed++;
        }
        return changed >= 6;
      },
      first,
      { timeout: 10_000 },
    );
    assert.equal(await page.locator("#cursor").textContent().then((s) => s?.startsWith(`rc1.${formatEpoch(srv.epoch)}.`)), true, "cursor shown");
    await page.screenshot({ path: join(resultsDir, "console-live.png"), fullPage: true });

    // Record every status word from now on, then restart the server on the same port.
    await page.evaluate(() => {
      const w = window as unknown as { statusLog: string[] };
      w.statusLog = [];
      const el = document.querySelector("[data-testid=stream-status]")!;
      new MutationObserver(() => w.statusLog.push(el.textContent ?? "")).observe(el, { childList: true, characterData: true, subtree: true });
    });
    const oldEpoch = srv.epoch;
    srv = await srv.restart();
    assert.notEqual(srv.epoch, oldEpoch);

    await page.waitForFunction(() => (window as unknown as { statusLog: string[] }).statusLog.some((s) => /resynced/i.test(s)), null, { timeout: 20_000 });
    assert.match((await status.textContent()) ?? "", /resynced/i);
    await page.screenshot({ path: join(resultsDir, "console-resynced.png"), fullPage: true });
    const banner = (await page.locator("#resync").textContent()) ?? "";
    assert.match(banner, /epoch mismatch/i);
    assert.ok(banner.includes(formatEpoch(oldEpoch)) && banner.includes(formatEpoch(srv.epoch)), "the banner names both epochs");

    await page.waitForFunction(
      () => {
        const log = (window as unknown as { statusLog: string[] }).statusLog;
        const r = log.findIndex((s) => /resynced/i.test(s));
        return r >= 0 && log.slice(r + 1).some((s) => /live/i.test(s)) && /live/i.test(log.at(-1) ?? "");
      },
      null,
      { timeout: 15_000 },
    );
    assert.equal(await page.locator("[data-gauge-key]").count(), 12, "gauges still populated after the resync");
    assert.equal(await page.locator("[data-gauge-key][data-stale]").count(), 0, "every gauge refreshed by the snapshot");
    assert.match((await page.locator("#resync-text").textContent()) ?? "", /12 gauges were rebuilt/);
    const cursor = (await page.locator("#cursor").textContent()) ?? "";
    assert.ok(cursor.startsWith(`rc1.${formatEpoch(srv.epoch)}.`), `cursor moved to the new epoch: ${cursor}`);
    const afterRestart = await levels(page);
    await page.waitForFunction(
      (before) => [...document.querySelectorAll<HTMLElement>("[data-gauge-key]")].some((e) => e.querySelector(".g-value")?.textContent !== before[e.dataset["gaugeKey"]!]),
      afterRestart,
      { timeout: 10_000 },
    );
    await page.screenshot({ path: join(resultsDir, "console.png"), fullPage: true });
    assert.deepEqual(errors, [], "no page errors");
    await page.close();
  });

  it("drops gauges a resync's snapshot lacks, and keeps what a partial reading leaves out", async (t) => {
    if (unavailable !== undefined) {
      if (inCI) assert.fail(`CI=true and ${unavailable}`);
      t.skip(unavailable);
      return;
    }
    let own = await startServer(["--demo-interval", "200ms"]);
    try {
      const page = await browser!.newPage({ viewport: { width: 1440, height: 1000 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(own.url + "/");
      await page.waitForFunction(() => document.querySelectorAll("[data-gauge-key]").length >= 12, null, { timeout: 15_000 });
      await page.waitForFunction(() => /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, { timeout: 15_000 });
      await page.evaluate(() => {
        const w = window as unknown as { statusLog: string[]; sawStale: number };
        w.statusLog = [];
        w.sawStale = 0;
        const el = document.querySelector("[data-testid=stream-status]")!;
        new MutationObserver(() => w.statusLog.push(el.textContent ?? "")).observe(el, { childList: true, characterData: true, subtree: true });
        new MutationObserver(() => {
          w.sawStale = Math.max(w.sawStale, document.querySelectorAll("[data-gauge-key][data-stale]").length);
        }).observe(document.getElementById("board")!, { attributes: true, attributeFilter: ["data-stale"], subtree: true });
      });

      // The new instance has no demo feed: its snapshot holds no gauge.
      own = await own.restart(["--demo=false"]);
      await page.waitForFunction(
        () => {
          const log = (window as unknown as { statusLog: string[] }).statusLog;
          const r = log.findIndex((s) => /resynced/i.test(s));
          return r >= 0 && /live/i.test(log.at(-1) ?? "");
        },
        null,
        { timeout: 20_000 },
      );
      assert.equal(await page.evaluate(() => (window as unknown as { sawStale: number }).sawStale), 12, "all gauges were greyed out on the resync");
      assert.equal(await page.locator("[data-gauge-key]").count(), 0, "no gauge from the old instance stays on screen");
      assert.equal(await page.locator(".catchment").count(), 0, "empty catchments are gone");
      assert.deepEqual(await page.$$eval(".summary b", (bs) => bs.map((b) => b.textContent)), ["0", "0", "0"], "summary counts recomputed");
      const banner = (await page.locator("#resync-text").textContent()) ?? "";
      assert.match(banner, /0 gauges were rebuilt/);
      assert.match(banner, /12 gauges with no reading on the server since then were removed/);
      await page.screenshot({ path: join(resultsDir, "console-resynced-empty.png"), fullPage: true });

      // A full reading, then one with only a level: the rest is kept.
      await publish(own.url, [
        {
          topic: "gauges/eden/g-900",
          type: "gauge.level",
          key: "g-900",
          data: { gauge: "g-900", name: "Eden at Test Bridge", catchment: "eden", level_m: 1.2, trend: "steady", state: "normal", warning_m: 2, severe_m: 3 },
        },
      ]);
      await publish(own.url, [{ topic: "gauges/eden/g-900", type: "gauge.level", key: "g-900", data: { level_m: 2.5 } }]);
      const card = page.locator("[data-gauge-key=g-900]");
      await page.waitForFunction(() => document.querySelector("[data-gauge-key=g-900]")?.getAttribute("data-level") === "2.5", null, { timeout: 10_000 });
      assert.equal(await card.locator(".g-name").textContent(), "Eden at Test Bridge");
      assert.equal(await card.locator(".g-thr").textContent(), "warn 2.00 · severe 3.00");
      assert.equal(await card.getAttribute("data-state"), "warning", "state follows the level and the kept thresholds");
      assert.deepEqual(await page.$$eval(".catchment h2", (hs) => hs.map((h) => h.textContent)), ["Eden"]);
      await page.waitForFunction(() => document.getElementById("n-warning")?.textContent === "1", null, { timeout: 5_000 });
      assert.deepEqual(errors, [], "no page errors");
      await page.close();
    } finally {
      await own.stop();
    }
  });

  it("native EventSource resumes by its own Last-Event-ID across leases, with no gap and no duplicate", async (t) => {
    if (unavailable !== undefined) {
      if (inCI) assert.fail(`CI=true and ${unavailable}`);
      t.skip(unavailable);
      return;
    }
    const leased = await startServer(["--demo-interval", "100ms", "--lease", "1s"]);
    try {
      const page = await browser!.newPage();
      await page.goto(leased.url + "/");
      await page.evaluate(() => {
        const w = window as unknown as { sse: { kind: string; id: string }[]; opens: number };
        w.sse = [];
        w.opens = 0;
        const es = new EventSource("/events");
        es.onopen = () => w.opens++;
        for (const kind of ["status", "commit", "progress", "caught-up", "gap"]) {
          es.addEventListener(kind, (e) => w.sse.push({ kind, id: (e as MessageEvent).lastEventId }));
        }
      });
      // The 1 s lease ends each response; EventSource reconnects by itself
      // (after the server's retry hint) with the last id it saw.
      // Wait for the third connection's caught-up, not just its open: on a
      // busy machine its replay can still be on the way when onopen fires.
      await page.waitForFunction(
        () => (window as unknown as { sse: { kind: string }[] }).sse.filter((e) => e.kind === "caught-up").length >= 3,
        null,
        { timeout: 60_000 },
      );
      const got = await page.evaluate(() => (window as unknown as { sse: { kind: string; id: string }[] }).sse);
      await page.close();
      assert.ok(!got.some((e) => e.kind === "gap"), "a resume within the window is never a gap");
      assert.ok(got.filter((e) => e.kind === "caught-up").length >= 3, "each connection catches up");
      const positioned = got.filter((e) => e.kind !== "caught-up");
      const epoch = formatEpoch(leased.epoch);
      const seqs = positioned.map((e) => {
        assert.ok(e.id.startsWith(epoch + "-"), `id ${e.id} carries the epoch`);
        return Number(e.id.slice(epoch.length + 1));
      });
      // Unfiltered, every seq from the bind status on arrives exactly once.
      assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `ids in order, no gap, no duplicate: ${seqs.join(",")}`);
    } finally {
      await leased.stop();
    }
  });
});
