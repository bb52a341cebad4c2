// The stream's state as an operator sees it: the status word, the outage
// banner (since when, for how long, the next attempt and "Reconnect now"),
// the resync banner, and the stream event log with repeated connection
// losses collapsed into one entry.
import { announce } from "./alerts.js";
import { $, el, fmtDuration, fmtTime } from "./dom.js";

export type StatusWord = "connecting" | "replaying" | "live" | "resynced" | "stopped";

const RESYNC_HOLD_MS = 2500;
const LOG_MAX = 60;

let shown: StatusWord = "connecting";
let holdUntil = 0;
let pending: { word: StatusWord; detail: string } | undefined;
let holdTimer: ReturnType<typeof setTimeout> | undefined;
let detailText = "";

/** The status word on screen. */
export const shownStatus = () => shown;

/** setStatus shows a status word; "resynced" stays up for a moment so operators see it. */
export function setStatus(word: StatusWord, detail: string): void {
  const now = Date.now();
  if (word !== "resynced" && now < holdUntil) {
    pending = { word, detail };
    clearTimeout(holdTimer);
    holdTimer = setTimeout(() => {
      const p = pending;
      pending = undefined;
      if (p) setStatus(p.word, p.detail);
    }, holdUntil - now);
    return;
  }
  if (word === "resynced") {
    holdUntil = now + RESYNC_HOLD_MS;
    pending = undefined;
  }
  const was = shown;
  shown = word;
  detailText = detail;
  document.querySelector<HTMLElement>(".status")!.dataset["state"] = word;
  $("status-detail").textContent = detail;
  $("stream-status").textContent = word;
  document.title = `${word === "live" ? "●" : "○"} ringcast · river levels`;
  // The resync banner gives way to the current state once live again (its text stays in the log).
  if (word === "live" && was !== "live") $("resync").hidden = true;
  renderOutage(now);
}

// ---- the event log ------------------------------------------------------

/** logEvent adds an entry to the stream event log and returns it. */
export function logEvent(kind: string, text: string, detail = "", at: Date | number = Date.now()): HTMLElement {
  const li = el("li", `ev k-${kind}`);
  li.append(el("time", undefined, fmtTime(at)), el("span", "ev-text", text));
  if (detail) li.append(el("span", "ev-detail", detail));
  const list = $("log");
  list.prepend(li);
  while (list.children.length > LOG_MAX) list.lastElementChild!.remove();
  return li;
}

// ---- outages ------------------------------------------------------------

/** When the board stopped being current (undefined while it is). */
let outageSince: number | undefined;
/** When the client will try again (undefined while an attempt is under way or the stream is open). */
let nextAttemptAt: number | undefined;
let lastError = "";
let lost: { li: HTMLElement; n: number; first: number } | undefined;
let stoppedWhy: string | undefined;

export const outageStart = () => outageSince;

/** beginOutage marks the board not current from `at` (no-op while already so). Returns whether it began now. */
export function beginOutage(at: number, why: string): boolean {
  lastError = why;
  if (outageSince !== undefined) return false;
  outageSince = at;
  $("resync").hidden = true;
  announce(`Connection to the server lost at ${fmtTime(at)}. The readings shown are not current.`, true);
  renderOutage(Date.now());
  return true;
}

/** endOutage: the stream is current again. Returns how long the board was not current (ms), if it was. */
export function endOutage(now: number): number | undefined {
  nextAttemptAt = undefined;
  lost = undefined;
  if (outageSince === undefined) return undefined;
  const ms = now - outageSince;
  outageSince = undefined;
  renderOutage(now);
  announce(`Live again after ${fmtDuration(ms)} without current data.`);
  return ms;
}

/** connectionLost logs a lost connection, collapsing repeats within one outage into one entry. */
export function connectionLost(why: string, now: number): void {
  lastError = why;
  if (lost && lost.li.isConnected) {
    lost.n++;
    lost.li.querySelector(".ev-text")!.textContent = `Connection lost ×${lost.n}, ${fmtTime(lost.first)}–${fmtTime(now)}`;
    lost.li.querySelector(".ev-detail")!.textContent = why;
    return;
  }
  lost = { li: logEvent("conn", "Connection lost", why, now), n: 1, first: now };
}

/** retryAt records when the next attempt is due (undefined: one is under way). */
export function retryAt(at: number | undefined): void {
  nextAttemptAt = at;
  renderOutage(Date.now());
}

let stoppedNext: string | undefined;

/** stopped shows a permanent end: no retry will come (next: what the operator can do). */
export function stopped(why: string, next?: string): void {
  stoppedWhy = why;
  stoppedNext = next;
  nextAttemptAt = undefined;
  renderOutage(Date.now());
}

/** unstopped: a new attempt starts after a permanent end (a token was entered). */
export function unstopped(): void {
  stoppedWhy = undefined;
  stoppedNext = undefined;
  renderOutage(Date.now());
}

/** renderOutage redraws the banner and the status detail; called every tick. */
export function renderOutage(now: number): void {
  const banner = $("outage");
  const down = outageSince !== undefined || stoppedWhy !== undefined;
  banner.hidden = !down;
  document.body.dataset["outage"] = String(down);
  $("summary-label").textContent = down || shown !== "live" ? "Last known" : "Now";
  const btn = $<HTMLButtonElement>("reconnect-now");
  if (!down) {
    btn.hidden = true;
    return;
  }
  const since = outageSince ?? now;
  $("outage-title").textContent =
    stoppedWhy === "not authorised" ? "Not authorised — the board is not current" : stoppedWhy ? "Stream stopped — the board is not current" : "Connection lost — the board is not current";
  $("outage-since").textContent = `No data since ${fmtTime(since)} · ${fmtDuration(now - since)} without current data`;
  let next: string;
  if (stoppedWhy) next = `The server refused the stream: ${stoppedWhy}. ${stoppedNext ?? "Reload the page to try again."}`;
  else if (nextAttemptAt !== undefined) next = `Next attempt in ${Math.max(0, Math.ceil((nextAttemptAt - now) / 1000))} s${lastError ? ` · last error: ${lastError}` : ""}`;
  else next = `Connecting now…${lastError ? ` · last error: ${lastError}` : ""}`;
  $("outage-next").textContent = next;
  btn.hidden = stoppedWhy !== undefined;
  btn.disabled = nextAttemptAt === undefined;
  if (shown === "connecting" && nextAttemptAt !== undefined) {
    $("status-detail").textContent = `retry in ${Math.max(0, Math.ceil((nextAttemptAt - now) / 1000))} s`;
  } else {
    $("status-detail").textContent = detailText;
  }
}
