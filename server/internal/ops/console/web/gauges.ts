// The gauge board: one card per gauge, grouped by catchment, with its
// level, state, reading age, staleness, trend picture, latest note, and the
// severity counts.
import { alert, isAcknowledged, renderAcks } from "./alerts.js";
import { $, el, fmtAge, fmtEvery, fmtLevel, fmtTime, rank, titleCase, type GaugeState } from "./dom.js";
import { RATE_MIN_MS, addPoints, drawSparkline, eta, rateOfRise, usualInterval, type Point } from "./trend.js";

export interface Gauge {
  key: string;
  name: string;
  catchment: string;
  level: number;
  trend: string;
  state: GaugeState;
  warning: number;
  severe: number;
  /** Commit time of the latest reading (ms). */
  readingAt: number;
  points: Point[];
  /** From before a resync and not refreshed by its snapshot yet. */
  resyncPending: boolean;
  /** No reading received since the board stopped being current. */
  awaitingLive: boolean;
  /** When the board stopped being current, for a gauge awaiting a reading. */
  staleSince: number;
  note?: { text: string; at: number };
  el: HTMLElement;
}

/** A gauge with no reading for more than this many of its usual intervals is stale… */
export const STALE_INTERVALS = 3;
/** …but never sooner than this. */
export const STALE_MIN_MS = 2000;

export const gauges = new Map<string, Gauge>();
const catchments = new Map<string, HTMLElement>();
/** Points and notes that came before their gauge's first reading. */
const early = new Map<string, { points: Point[]; note?: { text: string; at: number } }>();

function catchmentSection(name: string): HTMLElement {
  let sec = catchments.get(name);
  if (sec) return sec;
  sec = el("section", "catchment");
  sec.dataset["catchment"] = name;
  const head = el("header", "catchment-head");
  head.append(el("h2", undefined, titleCase(name)), el("span", "catchment-summary"));
  sec.append(head, el("div", "gauges"));
  catchments.set(name, sec);
  const after = [...catchments.keys()].sort().find((n) => n > name);
  $("board").insertBefore(sec, after ? catchments.get(after)! : null);
  $("empty").hidden = true;
  return sec;
}

const CARD = `
  <div class="g-head"><h3 class="g-name"></h3><span class="g-badge"></span></div>
  <div class="g-id"></div>
  <div class="g-main">
    <span class="g-level"><span class="g-value"></span><span class="g-unit">m</span></span>
    <span class="g-trend"></span>
  </div>
  <svg class="g-spark" role="img"></svg>
  <div class="g-rate"><span class="g-rate-value"></span> <span class="g-eta"></span></div>
  <div class="g-thr"></div>
  <div class="g-foot"><span class="g-stale-tag">Stale</span><span class="g-age"></span></div>
  <p class="g-note" hidden></p>`;

/** placeCard puts a card in its catchment: severe first, then warning, then normal; by key within each. */
function placeCard(g: Gauge): void {
  const list = catchmentSection(g.catchment).querySelector(".gauges")!;
  const before = (o: Gauge) => rank(o.state) < rank(g.state) || (rank(o.state) === rank(g.state) && o.key > g.key);
  const next = [...list.children].find((c) => {
    const o = gauges.get((c as HTMLElement).dataset["gaugeKey"] ?? "");
    return o !== undefined && o !== g && before(o);
  });
  if (g.el.parentElement === list && g.el.nextElementSibling === (next ?? null)) return;
  const focused = g.el.contains(document.activeElement);
  list.insertBefore(g.el, next ?? null);
  if (focused) g.el.focus();
}

export function newGauge(key: string, catchment: string): Gauge {
  const card = el("article", "gauge");
  card.dataset["gaugeKey"] = key;
  card.tabIndex = 0;
  card.innerHTML = CARD;
  const g: Gauge = {
    key, name: key, catchment, level: 0, trend: "steady", state: "normal", warning: 0, severe: 0,
    readingAt: Date.now(), points: [], resyncPending: false, awaitingLive: false, staleSince: 0, el: card,
  };
  const e = early.get(key);
  if (e) {
    addPoints(g.points, e.points);
    if (e.note) g.note = e.note;
    early.delete(key);
  }
  gauges.set(key, g);
  return g;
}

/** moveGauge re-files a gauge under another catchment. */
export function moveGauge(g: Gauge, catchment: string): void {
  const sec = g.el.closest<HTMLElement>(".catchment");
  g.catchment = catchment;
  placeCard(g);
  dropEmpty(sec);
}

function dropEmpty(sec: HTMLElement | null): void {
  if (sec && !sec.querySelector("[data-gauge-key]")) {
    sec.remove();
    catchments.delete(sec.dataset["catchment"] ?? "");
  }
  $("empty").hidden = gauges.size > 0;
}

/** removeGauge drops a gauge's card (and its catchment once empty), logging it when it was in an alert state. */
export function removeGauge(g: Gauge, why: string): void {
  gauges.delete(g.key);
  const sec = g.el.closest<HTMLElement>(".catchment");
  g.el.remove();
  dropEmpty(sec);
  if (g.state !== "normal") alert({ key: g.key, name: g.name, kind: "removed", to: g.state, level: g.level, at: new Date(), context: why });
}

/** addHistory merges readings into a gauge's history (kept aside until its first reading). */
export function addHistory(key: string, pts: Point[]): boolean {
  const g = gauges.get(key);
  if (g) return addPoints(g.points, pts);
  const e = early.get(key) ?? { points: [] };
  addPoints(e.points, pts);
  early.set(key, e);
  return false;
}

/** setNote shows a gauge's latest note. */
export function setNote(key: string, text: string, at: number): void {
  const g = gauges.get(key);
  if (!g) {
    const e = early.get(key) ?? { points: [] };
    if (!e.note || e.note.at <= at) e.note = { text, at };
    early.set(key, e);
    return;
  }
  if (!g.note || g.note.at <= at) g.note = { text, at };
  queueRender(g);
}

/** Why a gauge is stale now, or undefined. outageSince: when the board stopped being current. */
export function staleness(g: Gauge, now: number, outageSince: number | undefined): { since: number; why: string } | undefined {
  if (outageSince !== undefined) return { since: outageSince, why: "connection lost" };
  if (g.resyncPending) return { since: g.staleSince, why: "awaiting the resync snapshot" };
  if (g.awaitingLive) return { since: g.staleSince, why: "no reading since the outage" };
  const every = usualInterval(g.points);
  if (every !== undefined && now - g.readingAt > Math.max(STALE_INTERVALS * every, STALE_MIN_MS)) {
    return { since: g.readingAt, why: `silent for over ${STALE_INTERVALS}× its usual ${fmtEvery(every)}` };
  }
  return undefined;
}

const TREND: Record<string, string> = { rising: "▲ rising", falling: "▼ falling", steady: "▶ steady" };
const BADGE: Record<GaugeState, string> = { normal: "● Normal", warning: "▲ Warning", severe: "◆ Severe" };

let outage: number | undefined;
/** setOutage tells the board when it stopped being current (undefined: it is). */
export function setOutage(since: number | undefined): void {
  outage = since;
  const now = Date.now();
  for (const g of gauges.values()) {
    tickGauge(g, now); // at once: staleness is never left for a later frame
    queueRender(g);
  }
}

/** renderGauge redraws a card; cheap parts (age, staleness) are redrawn every tick by tickGauge. */
function renderGauge(g: Gauge, now: number): void {
  const c = g.el;
  c.dataset["state"] = g.state;
  c.dataset["level"] = String(g.level);
  c.querySelector(".g-name")!.textContent = g.name;
  c.querySelector(".g-id")!.textContent = `${g.key} · ${titleCase(g.catchment)}`;
  c.querySelector(".g-value")!.textContent = fmtLevel(g.level);
  c.querySelector(".g-badge")!.textContent = BADGE[g.state] + (isAcknowledged(g.key, g.state) ? " · ack" : "");
  const rate = rateOfRise(g.points);
  const tr = c.querySelector<HTMLElement>(".g-trend")!;
  tr.textContent = TREND[g.trend] ?? g.trend;
  tr.dataset["trend"] = g.trend;
  c.querySelector(".g-rate-value")!.textContent = rate
    ? `${rate.perHour >= 0 ? "+" : "−"}${Math.abs(rate.perHour).toFixed(2)} m/h over ${rate.spanMs < 90_000 ? `${Math.max(1, Math.round(rate.spanMs / 1000))} s` : `${Math.round(rate.spanMs / 60_000)} min`}`
    : `rate of rise: after ${RATE_MIN_MS / 1000} s of readings`;
  const svg = c.querySelector<SVGSVGElement>(".g-spark")!;
  const span = drawSparkline(svg, g.points, g.warning, g.severe, now);
  const mins = Math.max(1, Math.round(span / 60_000));
  svg.setAttribute(
    "aria-label",
    `Level over the last ${mins} min: ${g.points.length ? `from ${fmtLevel(g.points.find((p) => p.t >= now - span)?.v ?? g.level)} to ${fmtLevel(g.level)} m` : "no history"}`,
  );
  const next = eta(g.level, rate?.perHour, g.warning, g.severe);
  const etaEl = c.querySelector<HTMLElement>(".g-eta")!;
  etaEl.textContent = next ? `· ${next.what} in ~${next.minutes < 1 ? "<1" : Math.round(next.minutes)} min at this rate` : "";
  etaEl.dataset["what"] = next?.what ?? "";
  c.querySelector(".g-thr")!.textContent = `warning ${g.warning.toFixed(2)} m · severe ${g.severe.toFixed(2)} m · chart: last ${mins} min`;
  const note = c.querySelector<HTMLElement>(".g-note")!;
  note.hidden = !g.note;
  if (g.note) note.textContent = `Note ${fmtTime(g.note.at)}: ${g.note.text}`;
  c.setAttribute("aria-label", `${g.name}, ${fmtLevel(g.level)} metres, ${g.state}`);
  tickGauge(g, now);
}

/** tickGauge updates a card's age and staleness. */
export function tickGauge(g: Gauge, now: number): void {
  const c = g.el;
  const age = Math.max(0, now - g.readingAt);
  c.dataset["ageSeconds"] = String(Math.floor(age / 1000));
  const s = staleness(g, now, outage);
  const stale = String(s !== undefined);
  if (c.dataset["stale"] !== stale) c.dataset["stale"] = stale;
  const ageText = `reading ${fmtAge(age)}`;
  c.querySelector(".g-age")!.textContent = s ? `since ${fmtTime(s.since)} · ${s.why} · last ${ageText}` : `${ageText} (${fmtTime(g.readingAt)})`;
}

const dirty = new Set<Gauge>();
let frame = false;
export function queueRender(g: Gauge): void {
  dirty.add(g);
  if (frame) return;
  frame = true;
  requestAnimationFrame(() => {
    frame = false;
    const now = Date.now();
    for (const d of dirty) if (gauges.get(d.key) === d) renderGauge(d, now);
    dirty.clear();
    renderSummary();
  });
}

/** settle files a gauge after a reading and reports a change of its alert state (prev undefined: new to the board). */
export function settle(g: Gauge, prev: GaugeState | undefined, at: Date, context?: string): void {
  if (prev === undefined) {
    if (g.state !== "normal") alert({ key: g.key, name: g.name, kind: "first", to: g.state, level: g.level, at, ...(context ? { context } : {}) });
  } else if (prev !== g.state) {
    const kind = rank(g.state) > rank(prev) ? "enter" : "leave";
    alert({ key: g.key, name: g.name, kind: g.state === "normal" ? "leave" : kind, from: prev, to: g.state, level: g.level, at, ...(context ? { context } : {}) });
  }
  if (prev !== g.state) {
    placeCard(g);
    g.el.classList.remove("flash");
    void g.el.offsetWidth; // restart the animation
    if (prev !== undefined) g.el.classList.add("flash");
    renderAcks();
  } else if (!g.el.isConnected) {
    placeCard(g);
  }
  queueRender(g);
}

/** renderSummary recomputes the severity counts (last known while the board is not current). */
export function renderSummary(): void {
  const n: Record<GaugeState, number> = { normal: 0, warning: 0, severe: 0 };
  const per = new Map<string, Record<GaugeState, number>>();
  for (const g of gauges.values()) {
    if (g.resyncPending) continue; // about to be rebuilt or removed
    n[g.state]++;
    const p = per.get(g.catchment) ?? { normal: 0, warning: 0, severe: 0 };
    p[g.state]++;
    per.set(g.catchment, p);
  }
  $("n-severe").textContent = String(n.severe);
  $("n-warning").textContent = String(n.warning);
  $("n-normal").textContent = String(n.normal);
  for (const [name, sec] of catchments) {
    const p = per.get(name);
    const worst: GaugeState = p?.severe ? "severe" : p?.warning ? "warning" : "normal";
    sec.dataset["state"] = worst;
    const parts = [p?.severe ? `◆ ${p.severe} severe` : "", p?.warning ? `▲ ${p.warning} warning` : ""].filter(Boolean);
    sec.querySelector(".catchment-summary")!.textContent = parts.length ? parts.join(" · ") : "all normal";
  }
}

/** tickAll refreshes ages and staleness on every card. */
export function tickAll(now: number): void {
  for (const g of gauges.values()) tickGauge(g, now);
}
