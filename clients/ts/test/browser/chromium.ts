// Shared by the browser tests: Debian's Chromium through playwright-core,
// axe-core checks, and condition waits.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";

import { AxeBuilder } from "@axe-core/playwright";
import { chromium, type Browser, type Page } from "playwright-core";

const executablePath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/** launch starts Chromium, or says why it cannot. */
export async function launch(): Promise<Browser | string> {
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


/** axe checks the page against WCAG 2.1 A and AA and fails on any serious or critical violation. */
export async function axe(page: Page, state: string): Promise<void> {
  const r = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).setLegacyMode(true).analyze();
  const bad = r.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`),
    [],
    `axe on the ${state} board`,
  );
}

/**
 * waitForResync waits until the page's status log (window.statusLog, filled
 * by a MutationObserver the test installs on the status word) holds
 * "resynced", pressing "Reconnect now" whenever it is offered: while the
 * server was down the client's wait before its next attempt may have grown
 * to the backoff's 30 s cap, and the press starts the attempt at once. The
 * press happens in the page, so "offered" and "pressed" cannot be told
 * apart by a race.
 */
export function waitForResync(page: Page): Promise<unknown> {
  return waitFor(
    page,
    () => {
      const b = document.querySelector<HTMLButtonElement>("[data-testid=reconnect-now]")!;
      if (!b.hidden && !b.disabled) b.click();
      return (window as unknown as { statusLog: string[] }).statusLog.some((s) => /resynced/i.test(s));
    },
    null,
    "resynced (pressing Reconnect now while a delay is pending)",
  );
}

/** waitFor waits for a condition in the page; the timeout is only a hang guard. */
export function waitFor<A>(page: Page, fn: (arg: A) => boolean, arg: A, what: string, timeout = 30_000): Promise<unknown> {
  return page.waitForFunction(fn as (arg: unknown) => boolean, arg as unknown, { timeout, polling: 100 }).catch((e: unknown) => {
    throw new Error(`waiting for ${what}: ${e instanceof Error ? e.message : String(e)}`);
  });
}

