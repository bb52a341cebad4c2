// The web console in a real Chromium (Debian's /usr/bin/chromium through
// playwright-core): the live board with reading ages, trend lines and
// alerts; a SIGKILLed server makes every card stale under an outage banner;
// a restart shows "resynced" and then "live" with fresh readings; a gauge
// that stops reporting goes stale while the stream stays live; axe-core
// finds no serious or critical WCAG 2.1 AA violation in the live, outage and
// resynced states; a 390 px wide phone is usable; and Chromium's native
// EventSource resumes /events by its own Last-Event-ID across leases.
// Screenshots go to test-results/console/ at the repository root (the test
// prints the directory). Waits are for conditions, with generous timeouts
// only as hang guards.
//
// Without a runnable Chromium the test skips locally and FAILS under CI
// (CI=true). CHROMIUM_PATH overrides /usr/bin/chromium.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import type { Browser, Page } from "playwright-core";

import { formatEpoch } from "../../src/index.js";
import { publish, repoRoot, startServer, type Server } from "../harness.js";
import { axe, launch, waitFor, waitForResync } from "./chromium.js";

const inCI = process.env["CI"] === "true";
const resultsDir = join(repoRoot, "test-results", "console");

const levels = (page: Page) =>
  page.$$eval("#board [data-gauge-key]", (els) => Object.fromEntries(els.map((e) => [(e as HTMLElement).dataset["gaugeKey"], e.querySelector(".g-value")?.textContent ?? ""])));

const cardsWhere = (page: Page) =>
  page.$$eval("#board [data-gauge-key]", (els) =>
    els.map((e) => {
      const d = (e as HTMLElement).dataset;
      return { key: d["gaugeKey"]!, state: d["state"]!, level: d["level"]!, stale: d["stale"]!, age: d["ageSeconds"]!, text: e.textContent ?? "" };
    }),
  );

const severeReading = (key: string, level: number) => ({
  topic: `gauges/eden/${key}`,
  type: "gauge.level",
  key,
  data: { gauge: key, name: "Eden at a Very Long Named Test Footbridge Near Warwick Bridge", catchment: "eden", level_m: level, trend: "rising", state: "severe", warning_m: 2, severe_m: 3 },
});

describe("web console in Chromium", () => {
  let browser: Browser | undefined;
  let unavailable: string | undefined;

  before(async () => {
    const b = await launch();
    if (typeof b === "string") {
      unavailable = b;
      return;
    }
    browser = b;
    mkdirSync(resultsDir, { recursive: true });
    console.log(`console screenshots: ${resultsDir}`);
  });
  after(async () => {
    await browser?.close();
  });

  const skip = (t: { skip(m: string): void }) => {
    if (unavailable === undefined) return false;
    if (inCI) assert.fail(`CI=true and ${unavailable}`);
    t.skip(unavailable);
    return true;
  };

  it("shows a live board, an unmissable outage on SIGKILL, and resynced then live after a restart", async (t) => {
    if (skip(t)) return;
    let srv: Server = await startServer(["--demo", "--demo-interval", "200ms"]);
    try {
      const page = await browser!.newPage({ viewport: { width: 1440, height: 1000 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(srv.url + "/");

      // ---- live ----
      await waitFor(page, () => /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, "live");
      await waitFor(page, () => document.querySelectorAll("#board [data-gauge-key]").length >= 12, null, "twelve gauges");
      assert.deepEqual(await page.$$eval(".catchment h2", (hs) => hs.map((h) => h.textContent)), ["Eden", "Lune", "Ribble", "Wyre"]);
      for (const c of await cardsWhere(page)) {
        assert.match(c.state, /^(normal|warning|severe)$/, `gauge ${c.key} has a state`);
        assert.ok(Number.isFinite(Number(c.level)), `gauge ${c.key} has a level`);
        assert.ok(c.text.includes(Number(c.level).toFixed(3)), `gauge ${c.key}'s text shows its level`);
        assert.match(c.age, /^\d+$/, `gauge ${c.key} has an age`);
        assert.match(c.text, /reading \d+ s ago/, `gauge ${c.key} shows its age`);
      }
      await waitFor(page, () => [...document.querySelectorAll<HTMLElement>("#board [data-gauge-key]")].every((e) => e.dataset["stale"] === "false"), null, "no stale card while live");
      // Levels move as the feed publishes (every 200 ms).
      const first = await levels(page);
      await waitFor(
        page,
        (before) => [...document.querySelectorAll<HTMLElement>("#board [data-gauge-key]")].filter((e) => e.querySelector(".g-value")?.textContent !== before[e.dataset["gaugeKey"]!]).length >= 6,
        first,
        "levels to move",
      );
      // Every card draws its recent levels, with the warning and severe lines.
      await waitFor(page, () => [...document.querySelectorAll<SVGElement>("#board [data-gauge-key] .g-spark")].every((s) => Number(s.dataset["points"]) >= 5 && s.querySelector(".s-line") !== null), null, "sparklines with points");
      assert.equal(await page.locator(".g-spark .s-warn").count(), 12);
      assert.equal(await page.locator(".g-spark .s-severe").count(), 12);
      await waitFor(page, () => /[+−]\d+\.\d\d m\/h over \d+ (s|min)/.test(document.querySelector("#board [data-gauge-key] .g-rate")?.textContent ?? ""), null, "the rate of rise, once there are 10 s of readings", 60_000);
      assert.equal(await page.locator("details.details").getAttribute("open"), null, "stream details start collapsed");

      // ---- alerts ----
      // A new gauge that first appears severe, with a long name: an alert, sorted first in its catchment, the name not cut.
      await publish(srv.url, [severeReading("g-901", 3.4)]);
      await waitFor(page, () => document.querySelector("[data-testid=alert-log] [data-alert][data-gauge-key=g-901][data-state=severe]") !== null, null, "an alert for the new severe gauge");
      // Severe first within its catchment (by key among severe ones: a demo gauge may be severe too).
      const eden = await page.$$eval(".catchment[data-catchment=eden] [data-gauge-key]", (cs) => cs.map((c) => [c.getAttribute("data-gauge-key"), c.getAttribute("data-state")]));
      const at = eden.findIndex(([key]) => key === "g-901");
      assert.ok(at >= 0 && eden.slice(0, at + 1).every(([, state]) => state === "severe"), `severe sorts first within its catchment: ${JSON.stringify(eden)}`);
      assert.equal(await page.locator(".catchment[data-catchment=eden]").getAttribute("data-state"), "severe");
      await waitFor(page, () => /Eden at a Very Long.*SEVERE/.test(document.getElementById("announce-urgent")?.textContent ?? ""), null, "the announcement in the assertive live region");
      await publish(srv.url, [{ topic: "gauges/eden/g-901", type: "gauge.note", data: { text: "crew on site, road closed" } }]);
      await waitFor(page, () => /crew on site/.test(document.querySelector("#board [data-gauge-key=g-901] .g-note")?.textContent ?? ""), null, "the note on the card");
      assert.equal(await page.locator("[data-testid=alert-log] [data-note][data-gauge-key=g-901]").count(), 1, "the note in the log");
      // Acknowledge: kept in sessionStorage across a reload.
      await page.locator("[data-alert][data-gauge-key=g-901] button.ack").click();
      assert.equal(await page.locator("[data-alert][data-gauge-key=g-901]").getAttribute("data-acknowledged"), "true");
      await page.reload();
      await waitFor(page, () => document.querySelector("[data-alert][data-gauge-key=g-901][data-state=severe]")?.getAttribute("data-acknowledged") === "true", null, "the acknowledgement after a reload");
      await waitFor(page, () => /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, "live after the reload");
      // Names wrap instead of being cut.
      const cut = await page.$$eval(".g-name", (ns) => ns.filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.textContent));
      assert.deepEqual(cut, [], "no gauge name is truncated");
      // Leaving severe is an alert too.
      await publish(srv.url, [{ topic: "gauges/eden/g-901", type: "gauge.level", key: "g-901", data: { level_m: 2.5, state: "warning" } }]);
      await waitFor(page, () => document.querySelector("[data-alert][data-gauge-key=g-901][data-state=warning]") !== null, null, "an alert for severe → warning");
      await page.screenshot({ path: join(resultsDir, "live.png"), fullPage: true });
      await axe(page, "live");

      // ---- outage: SIGKILL ----
      await page.evaluate(() => {
        const w = window as unknown as { statusLog: string[] };
        w.statusLog = [];
        const e = document.querySelector("[data-testid=stream-status]")!;
        new MutationObserver(() => w.statusLog.push(e.textContent ?? "")).observe(e, { childList: true, characterData: true, subtree: true });
      });
      const port = srv.port;
      const oldEpoch = srv.epoch;
      await srv.kill();
      await waitFor(
        page,
        () => {
          const cards = [...document.querySelectorAll<HTMLElement>("#board [data-gauge-key]")];
          return cards.length >= 13 && cards.every((e) => e.dataset["stale"] === "true") && !document.getElementById("outage")!.hidden;
        },
        null,
        "every card stale and the outage banner",
      );
      assert.match((await page.locator("[data-testid=stream-status]").textContent()) ?? "", /connecting/);
      assert.match((await page.locator("#outage").textContent()) ?? "", /Connection lost — the board is not current/);
      assert.match((await page.locator("#outage-since").textContent()) ?? "", /No data since \d\d:\d\d:\d\d · \d+:\d\d without current data/);
      assert.equal(await page.locator("#summary-label").textContent(), "Last known");
      assert.match((await page.locator("#board [data-gauge-key=g-011]").textContent()) ?? "", /Stale.*since \d\d:\d\d:\d\d · connection lost/);
      // Repeated failed attempts collapse into one entry.
      await waitFor(page, () => /Connection lost ×\d+, \d\d:\d\d:\d\d–\d\d:\d\d:\d\d/.test(document.getElementById("log")?.textContent ?? ""), null, "collapsed connection losses");
      assert.equal(await page.locator("#log .ev-text", { hasText: "Connection lost" }).count(), 1, "one entry for the whole outage");
      await waitFor(page, () => /Next attempt in \d+ s/.test(document.getElementById("outage-next")?.textContent ?? ""), null, "the countdown");
      await page.screenshot({ path: join(resultsDir, "outage.png"), fullPage: true });
      await axe(page, "outage");

      // ---- restart: resynced, then live with fresh values ----
      srv = await startServer(["--demo", "--demo-interval", "200ms"], port);
      assert.notEqual(srv.epoch, oldEpoch);
      await waitForResync(page);
      await page.screenshot({ path: join(resultsDir, "resynced.png"), fullPage: true });
      const banner = (await page.locator("#resync").textContent()) ?? "";
      assert.match(banner, /epoch mismatch/i);
      assert.ok(banner.includes(formatEpoch(oldEpoch)) && banner.includes(formatEpoch(srv.epoch)), "the banner names both epochs");
      await axe(page, "resynced");
      await waitFor(
        page,
        () => {
          const log = (window as unknown as { statusLog: string[] }).statusLog;
          const r = log.findIndex((s) => /resynced/i.test(s));
          return r >= 0 && /live/i.test(log.at(-1) ?? "") && [...document.querySelectorAll<HTMLElement>("#board [data-gauge-key]")].every((e) => e.dataset["stale"] === "false");
        },
        null,
        "live with every card fresh",
      );
      assert.equal(await page.locator("#board [data-gauge-key]").count(), 12, "the twelve demo gauges; g-901 is not on the new server");
      assert.ok(await page.locator("#outage").isHidden(), "no outage banner once live");
      assert.ok(await page.locator("#resync").isHidden(), "the resync banner gave way to the live board");
      assert.equal(await page.locator("#summary-label").textContent(), "Now");
      const log = (await page.locator("#log").textContent()) ?? "";
      assert.match(log, /12 gauges were rebuilt/, "the resync's account stays in the log");
      assert.ok(
        (await page.locator("[data-alert=removed][data-gauge-key=g-901][data-state=warning]").count()) === 1,
        "a gauge removed by the resync while in warning is an alert",
      );
      const cursor = (await page.locator("#cursor").textContent()) ?? "";
      assert.ok(cursor.startsWith(`rc2.${formatEpoch(srv.epoch)}.`), `cursor moved to the new epoch: ${cursor}`);
      // The trend lines keep the readings from before the restart and add
      // the new instance's, with a break at the restart (readings of two
      // epochs are never joined, however short the outage). Per gauge, by
      // key: cards move when a gauge changes state.
      const pointsBefore = await page.$$eval("#board [data-gauge-key]", (cs) =>
        Object.fromEntries(cs.map((c) => [(c as HTMLElement).dataset["gaugeKey"]!, Number(c.querySelector<SVGElement>(".g-spark")!.dataset["points"])])),
      );
      await waitFor(
        page,
        (before) =>
          [...document.querySelectorAll<HTMLElement>("#board [data-gauge-key]")].every((c) => {
            const s = c.querySelector<SVGElement>(".g-spark")!;
            return Number(s.dataset["points"]) > before[c.dataset["gaugeKey"]!]! && (s.querySelector(".s-line")?.getAttribute("d") ?? "").split("M").length - 1 >= 2;
          }),
        pointsBefore,
        "sparklines that go on across the restart with new readings, with a break at the restart",
      );
      await page.screenshot({ path: join(resultsDir, "live-again.png"), fullPage: true });
      assert.deepEqual(errors, [], "no page errors");
      await page.close();
    } finally {
      await srv.stop();
    }
  });

  it("flags a gauge that stops reporting as stale while the stream stays live", async (t) => {
    if (skip(t)) return;
    const srv = await startServer(["--demo=false"]);
    try {
      const page = await browser!.newPage({ viewport: { width: 1000, height: 800 } });
      await page.goto(srv.url + "/");
      await waitFor(page, () => /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, "live");
      // A gauge reporting every 300 ms, then falling silent.
      for (let i = 0; i < 6; i++) {
        await publish(srv.url, [{ topic: "gauges/wyre/g-950", type: "gauge.level", key: "g-950", data: { name: "Wyre at Test Weir", catchment: "wyre", level_m: 1 + i / 100, warning_m: 2, severe_m: 3 } }]);
        await new Promise((r) => setTimeout(r, 300));
      }
      await waitFor(page, () => document.querySelector("#board [data-gauge-key=g-950]")?.getAttribute("data-stale") === "true", null, "the silent gauge to go stale");
      assert.match((await page.locator("[data-testid=stream-status]").textContent()) ?? "", /live/, "the stream is still live");
      assert.match((await page.locator("#board [data-gauge-key=g-950]").textContent()) ?? "", /silent for over 3× its usual/);
      await page.screenshot({ path: join(resultsDir, "silent-gauge.png"), fullPage: true });
      // Reporting again clears it. A reading counts as fresh for about 2 s
      // after its commit, so on a busy machine one reading may reach the page
      // too late to look fresh: the gauge reports again at its usual pace
      // until the page has shown the card fresh (seen by an observer, so a
      // moment between two polls is not missed).
      await page.evaluate(() => {
        const w = window as unknown as { sawFresh: boolean };
        w.sawFresh = false;
        const card = document.querySelector<HTMLElement>("#board [data-gauge-key=g-950]")!;
        new MutationObserver(() => {
          if (card.dataset["stale"] === "false") w.sawFresh = true;
        }).observe(card, { attributes: true, attributeFilter: ["data-stale"] });
      });
      const sawFresh = () => page.evaluate(() => (window as unknown as { sawFresh: boolean }).sawFresh);
      for (let i = 0; !(await sawFresh()); i++) {
        assert.ok(i < 200, "the card never showed fresh while the gauge reported again (hang guard)");
        await publish(srv.url, [{ topic: "gauges/wyre/g-950", type: "gauge.level", key: "g-950", data: { level_m: 1.2 + i / 1000 } }]);
        await new Promise((r) => setTimeout(r, 300));
      }
      await page.close();
    } finally {
      await srv.stop();
    }
  });

  it("draws a gauge's retained readings on load, before any live one", async (t) => {
    if (skip(t)) return;
    const srv = await startServer(["--demo=false"]);
    try {
      // Twelve readings of one gauge, all published before the page opens: only the retained read can draw them.
      for (let i = 0; i < 12; i++) {
        await publish(srv.url, [{ topic: "gauges/ribble/g-960", type: "gauge.level", key: "g-960", data: { name: "Ribble at Test Gauge", catchment: "ribble", level_m: 1 + (i % 4) / 10, warning_m: 2, severe_m: 3 } }]);
      }
      const page = await browser!.newPage({ viewport: { width: 1000, height: 800 } });
      await page.goto(srv.url + "/");
      await waitFor(page, () => document.querySelector<SVGElement>("#board [data-gauge-key=g-960] .g-spark")?.dataset["points"] === "12", null, "all twelve retained readings in the sparkline");
      assert.ok(await page.locator("#board [data-gauge-key=g-960] .g-spark .s-line").count(), "a line is drawn");

      // The sound toggle for severe alerts is a pressed/unpressed button kept for the tab.
      const sound = page.locator("#sound");
      assert.equal(await sound.getAttribute("aria-pressed"), "false");
      await sound.click();
      assert.equal(await sound.getAttribute("aria-pressed"), "true");
      assert.equal(await page.evaluate(() => sessionStorage.getItem("ringcast.console.sound")), "true");

      // Keyboard focus is visible.
      await page.keyboard.press("Tab");
      const outline = await page.evaluate(() => {
        const s = getComputedStyle(document.activeElement!);
        return { style: s.outlineStyle, width: s.outlineWidth, what: document.activeElement!.textContent };
      });
      assert.ok(outline.style !== "none" && outline.width !== "0px", `focus outline on ${outline.what}: ${JSON.stringify(outline)}`);
      await page.close();
    } finally {
      await srv.stop();
    }
  });

  it("is usable on a 390 px wide phone", async (t) => {
    if (skip(t)) return;
    const srv = await startServer(["--demo", "--demo-interval", "200ms"]);
    try {
      const page = await browser!.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
      await page.goto(srv.url + "/");
      await waitFor(page, () => document.querySelectorAll("#board [data-gauge-key]").length >= 12 && /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, "live with twelve gauges");
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), "no sideways scrolling");
      const outside = await page.$$eval("#board [data-gauge-key], .panel, .status", (els) => els.filter((e) => { const r = e.getBoundingClientRect(); return r.left < 0 || r.right > window.innerWidth; }).length);
      assert.equal(outside, 0, "cards and panels fit the width");
      const cut = await page.$$eval(".g-name", (ns) => ns.filter((n) => n.scrollWidth > n.clientWidth + 1).length);
      assert.equal(cut, 0, "names wrap");
      await page.screenshot({ path: join(resultsDir, "phone.png") });
      await axe(page, "phone");
      await page.close();
    } finally {
      await srv.stop();
    }
  });

  it("drops gauges a resync's snapshot lacks, and keeps what a partial reading leaves out", async (t) => {
    if (unavailable !== undefined) {
      if (inCI) assert.fail(`CI=true and ${unavailable}`);
      t.skip(unavailable);
      return;
    }
    let own = await startServer(["--demo", "--demo-interval", "200ms"]);
    try {
      const page = await browser!.newPage({ viewport: { width: 1440, height: 1000 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(own.url + "/");
      await waitFor(page, () => document.querySelectorAll("#board [data-gauge-key]").length >= 12, null, "twelve gauges");
      await waitFor(page, () => /live/i.test(document.querySelector("[data-testid=stream-status]")?.textContent ?? ""), null, "live");
      await page.evaluate(() => {
        const w = window as unknown as { statusLog: string[]; sawStale: number };
        w.statusLog = [];
        w.sawStale = 0;
        const el = document.querySelector("[data-testid=stream-status]")!;
        new MutationObserver(() => w.statusLog.push(el.textContent ?? "")).observe(el, { childList: true, characterData: true, subtree: true });
        new MutationObserver(() => {
          w.sawStale = Math.max(w.sawStale, document.querySelectorAll("#board [data-gauge-key][data-stale=true]").length);
        }).observe(document.getElementById("board")!, { attributes: true, attributeFilter: ["data-stale"], subtree: true });
      });

      // The new instance has no demo feed: its snapshot holds no gauge.
      own = await own.restart(["--demo=false"]);
      await waitForResync(page);
      await waitFor(
        page,
        () => {
          const log = (window as unknown as { statusLog: string[] }).statusLog;
          const r = log.findIndex((s) => /resynced/i.test(s));
          return r >= 0 && /live/i.test(log.at(-1) ?? "");
        },
        null,
        "resynced, then live",
      );
      assert.equal(await page.evaluate(() => (window as unknown as { sawStale: number }).sawStale), 12, "all gauges were greyed out on the resync");
      assert.equal(await page.locator("#board [data-gauge-key]").count(), 0, "no gauge from the old instance stays on screen");
      assert.equal(await page.locator(".catchment").count(), 0, "empty catchments are gone");
      assert.deepEqual(await page.$$eval(".summary b", (bs) => bs.map((b) => b.textContent)), ["0", "0", "0"], "summary counts recomputed");
      const banner = (await page.locator("#log").textContent()) ?? "";
      assert.match(banner, /0 gauges were rebuilt/);
      assert.match(banner, /12 gauges with no reading on the server since then were removed/);
      await page.screenshot({ path: join(resultsDir, "resynced-empty.png"), fullPage: true });

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
      const card = page.locator("#board [data-gauge-key=g-900]");
      await waitFor(page, () => document.querySelector("#board [data-gauge-key=g-900]")?.getAttribute("data-level") === "2.5", null, "the partial reading");
      assert.equal(await card.locator(".g-name").textContent(), "Eden at Test Bridge");
      assert.match((await card.locator(".g-thr").textContent()) ?? "", /^warning 2\.00 m · severe 3\.00 m/);
      assert.equal(await card.getAttribute("data-state"), "warning", "state follows the level and the kept thresholds");
      assert.deepEqual(await page.$$eval(".catchment h2", (hs) => hs.map((h) => h.textContent)), ["Eden"]);
      await waitFor(page, () => document.getElementById("n-warning")?.textContent === "1", null, "one gauge counted in warning");
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
    const leased = await startServer(["--demo", "--demo-interval", "100ms", "--lease", "1s"]);
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
      await waitFor(page, () => (window as unknown as { sse: { kind: string }[] }).sse.filter((e) => e.kind === "caught-up").length >= 3, null, "the third connection's caught-up", 60_000);
      const got = await page.evaluate(() => (window as unknown as { sse: { kind: string; id: string }[] }).sse);
      await page.close();
      assert.ok(!got.some((e) => e.kind === "gap"), "a resume within the window is never a gap");
      assert.ok(got.filter((e) => e.kind === "caught-up").length >= 3, "each connection catches up");
      const positioned = got.filter((e) => e.kind !== "caught-up");
      const epoch = formatEpoch(leased.epoch);
      const seqs = positioned.map((e) => {
        // <epoch>-<seq>-<fingerprint>: the seq is the middle part.
        const [idEpoch, seq, fingerprint] = e.id.split("-");
        assert.ok(idEpoch === epoch && /^[0-9a-f]{8}$/.test(fingerprint ?? ""), `id ${e.id} carries the epoch and a fingerprint`);
        return Number(seq);
      });
      // Unfiltered, every seq from the bind status on arrives exactly once.
      assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `ids in order, no gap, no duplicate: ${seqs.join(",")}`);
    } finally {
      await leased.stop();
    }
  });
});
