// The ringcast web console: live river gauges from the demo feed, the
// stream's state and the client's cursor. Plain DOM over the TS client.
import { createGrpcWebTransport } from "@connectrpc/connect-web";

import {
  formatCursor,
  formatEpoch,
  subscribe,
  type ConnectionEvent,
  type FactItem,
  type ResyncedSignal,
  type StreamItem,
} from "../../../clients/ts/src/index.js";

type GaugeState = "normal" | "warning" | "severe";
type StatusWord = "connecting" | "replaying" | "live" | "resynced" | "stopped";

interface Gauge {
  key: string;
  name: string;
  catchment: string;
  level: number;
  trend: string;
  state: GaugeState;
  warning: number;
  severe: number;
  /** Shown from before the last resync and not refreshed by its snapshot yet. */
  stale: boolean;
  el: HTMLElement;
}

const RESYNC_HOLD_MS = 2500;
const LOG_MAX = 60;

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`console: missing #${id}`);
  return el as T;
};

const gauges = new Map<string, Gauge>();
const catchments = new Map<string, HTMLElement>();

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
const fmtTime = (d: Date = new Date()) => timeFmt.format(d);
const fmtLevel = (m: number) => m.toFixed(3);
const titleCase = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

// ---- status -------------------------------------------------------------

let shown: StatusWord = "connecting";
let holdUntil = 0;
let pending: { word: StatusWord; detail: string } | undefined;
let holdTimer: ReturnType<typeof setTimeout> | undefined;

/** setStatus shows a status word; "resynced" stays up for a moment so operators see it. */
function setStatus(word: StatusWord, detail: string): void {
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
  shown = word;
  const box = document.querySelector<HTMLElement>(".status")!;
  box.dataset["state"] = word;
  $("status-detail").textContent = detail;
  document.querySelector<HTMLElement>("[data-testid=stream-status]")!.textContent = word;
  document.title = `${word === "live" ? "●" : "○"} ringcast · river levels`;
}

// ---- gauges -------------------------------------------------------------

function catchmentSection(name: string): HTMLElement {
  let sec = catchments.get(name);
  if (sec) return sec;
  sec = el("section", "catchment");
  sec.dataset["catchment"] = name;
  const head = el("header", "catchment-head");
  head.append(el("h2", undefined, titleCase(name)), el("span", "catchment-summary"));
  sec.append(head, el("div", "gauges"));
  catchments.set(name, sec);
  const board = $("board");
  const after = [...catchments.keys()].sort().find((n) => n > name);
  board.insertBefore(sec, after ? catchments.get(after)! : null);
  $("empty").hidden = true;
  return sec;
}

function gaugeCard(key: string, catchment: string): HTMLElement {
  const card = el("article", "gauge");
  card.dataset["gaugeKey"] = key;
  card.innerHTML = `
    <div class="g-head"><span class="g-name"></span><span class="g-id"></span></div>
    <div class="g-main">
      <span class="g-level"><span class="g-value"></span><span class="g-unit">m</span></span>
      <span class="g-trend"></span>
    </div>
    <div class="g-bar" aria-hidden="true"><div class="g-fill"></div><i class="g-mark warn"></i><i class="g-mark severe"></i></div>
    <div class="g-foot"><span class="g-badge"></span><span class="g-thr"></span></div>`;
  const list = catchmentSection(catchment).querySelector(".gauges")!;
  const after = [...list.children].find((c) => ((c as HTMLElement).dataset["gaugeKey"] ?? "") > key);
  list.insertBefore(card, after ?? null);
  return card;
}

const STALE_BADGE = "no data since resync";

/** markStale greys a card out (or back in) without touching its reading. */
function markStale(g: Gauge, stale: boolean): void {
  g.stale = stale;
  if (stale) g.el.dataset["stale"] = "true";
  else delete g.el.dataset["stale"];
  g.el.querySelector(".g-badge")!.textContent = stale ? STALE_BADGE : titleCase(g.state);
}

/** removeGauge drops a gauge's card, and its catchment's section once empty. */
function removeGauge(g: Gauge): void {
  gauges.delete(g.key);
  const sec = g.el.closest<HTMLElement>(".catchment");
  g.el.remove();
  if (sec && !sec.querySelector("[data-gauge-key]")) {
    sec.remove();
    catchments.delete(sec.dataset["catchment"] ?? "");
  }
  $("empty").hidden = gauges.size > 0;
}

const TREND: Record<string, string> = { rising: "▲ rising", falling: "▼ falling", steady: "▶ steady" };

function renderGauge(g: Gauge): void {
  const c = g.el;
  c.dataset["state"] = g.state;
  markStale(g, g.stale);
  c.dataset["level"] = String(g.level);
  c.querySelector(".g-name")!.textContent = g.name;
  c.querySelector(".g-id")!.textContent = g.key;
  c.querySelector(".g-value")!.textContent = fmtLevel(g.level);
  const tr = c.querySelector<HTMLElement>(".g-trend")!;
  tr.textContent = TREND[g.trend] ?? g.trend;
  tr.dataset["trend"] = g.trend;
  const scale = Math.max(g.severe * 1.25, g.level, 0.1);
  const pct = (v: number) => `${Math.min(100, (v / scale) * 100).toFixed(2)}%`;
  c.querySelector<HTMLElement>(".g-fill")!.style.width = pct(g.level);
  c.querySelector<HTMLElement>(".g-mark.warn")!.style.left = pct(g.warning);
  c.querySelector<HTMLElement>(".g-mark.severe")!.style.left = pct(g.severe);
  c.querySelector(".g-badge")!.textContent = g.stale ? STALE_BADGE : titleCase(g.state);
  c.querySelector(".g-thr")!.textContent = `warn ${g.warning.toFixed(2)} · severe ${g.severe.toFixed(2)}`;
  c.title = `${g.name} (${g.key}): ${fmtLevel(g.level)} m, ${g.state}`;
}

let summaryQueued = false;
function queueSummary(): void {
  if (summaryQueued) return;
  summaryQueued = true;
  requestAnimationFrame(() => {
    summaryQueued = false;
    const n: Record<GaugeState, number> = { normal: 0, warning: 0, severe: 0 };
    const per = new Map<string, Record<GaugeState, number>>();
    for (const g of gauges.values()) {
      if (g.stale) continue; // not a current reading
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
      const parts = [p?.severe ? `${p.severe} severe` : "", p?.warning ? `${p.warning} warning` : ""].filter(Boolean);
      sec.querySelector(".catchment-summary")!.textContent = parts.length ? parts.join(" · ") : "all normal";
    }
  });
}

function num(v: unknown, d = 0): number {
  return typeof v === "number" && Number.isFinite(v) ? v : d;
}
function str(v: unknown, d = ""): string {
  return typeof v === "string" ? v : d;
}
function stateOf(v: unknown): GaugeState {
  return v === "warning" || v === "severe" ? v : "normal";
}

function onLevel(f: FactItem): void {
  const d = f.data ?? {};
  const key = f.key || str(d["gauge"]);
  if (!key) return;
  let g = gauges.get(key);
  // A fact may carry only some fields: what it lacks keeps its last value.
  const catchment = str(d["catchment"], g?.catchment ?? f.topic.split("/")[1] ?? "other");
  if (!g) {
    g = { key, name: key, catchment, level: 0, trend: "steady", state: "normal", warning: 0, severe: 0, stale: false, el: gaugeCard(key, catchment) };
    gauges.set(key, g);
  } else if (g.catchment !== catchment) {
    removeGauge(g);
    g.catchment = catchment;
    g.el = gaugeCard(key, catchment);
    gauges.set(key, g);
  }
  g.name = str(d["name"], g.name);
  g.level = num(d["level_m"], g.level);
  g.trend = str(d["trend"], g.trend);
  g.warning = num(d["warning_m"], g.warning);
  g.severe = num(d["severe_m"], g.severe);
  if (d["state"] !== undefined) g.state = stateOf(d["state"]);
  else if (d["level_m"] !== undefined && g.severe > 0) g.state = g.level >= g.severe ? "severe" : g.warning > 0 && g.level >= g.warning ? "warning" : "normal";
  g.stale = false;
  renderGauge(g);
  queueSummary();
}

function onThreshold(f: FactItem): void {
  const d = f.data ?? {};
  const to = stateOf(d["to"]);
  const from = stateOf(d["from"]);
  const rising = rank(to) > rank(from);
  log(to, `${str(d["name"], str(d["gauge"]))}: ${from} → ${to}`, `${fmtLevel(num(d["level_m"]))} m · ${rising ? "rising" : "easing"}`, f.eventTime);
  const g = gauges.get(str(d["gauge"]));
  if (g) {
    g.el.classList.remove("flash");
    void g.el.offsetWidth; // restart the animation
    g.el.classList.add("flash");
  }
}

const rank = (s: GaugeState) => (s === "severe" ? 2 : s === "warning" ? 1 : 0);

// ---- log ----------------------------------------------------------------

function log(kind: string, text: string, detail = "", at?: Date): void {
  const li = el("li", `ev k-${kind}`);
  li.append(el("time", undefined, fmtTime(at)), el("span", "ev-text", text));
  if (detail) li.append(el("span", "ev-detail", detail));
  const list = $("log");
  list.prepend(li);
  while (list.children.length > LOG_MAX) list.lastElementChild!.remove();
}

// ---- stream -------------------------------------------------------------

const REASONS: Record<string, string> = {
  EPOCH_MISMATCH: "the server restarted (new epoch)",
  CURSOR_TOO_OLD: "the events after our position left the server's window",
  CURSOR_AHEAD: "our position is ahead of the server's",
  SUBSCRIBER_LAGGING: "this page fell too far behind the live stream",
  FACT_OUT_OF_RANGE: "the commit we stopped inside is gone",
};

/** Set from a "resynced" item until the "caught_up" that ends its snapshot. */
let resyncText: string | undefined;

function onResynced(r: ResyncedSignal): void {
  // Everything on screen predates what was missed: grey it out until the
  // snapshot refreshes it.
  for (const g of gauges.values()) markStale(g, true);
  queueSummary();
  const why = REASONS[r.reasonName] ?? r.reasonName.toLowerCase();
  const text =
    `Missed events: ${why}. Asked to resume after seq ${r.requestedSeq}` +
    (r.previousEpoch && r.previousEpoch !== r.epoch ? ` of epoch ${formatEpoch(r.previousEpoch)}` : "") +
    `; the server holds seq ${r.oldestSeq}–${r.headSeq}` +
    (r.previousEpoch !== r.epoch ? ` of epoch ${formatEpoch(r.epoch)}` : "") +
    `.`;
  resyncText = text;
  $("resync-when").textContent = `at ${fmtTime()} · ${r.reasonName.toLowerCase().replaceAll("_", " ")}`;
  $("resync-text").textContent = `${text} Rebuilding the gauges from each gauge's latest reading on the server…`;
  $("resync").hidden = false;
  setStatus("resynced", `${r.reasonName.toLowerCase().replaceAll("_", " ")} · seq ${r.requestedSeq} → snapshot at ${r.headSeq}`);
  log("resync", `Resynced: ${r.reasonName.toLowerCase().replaceAll("_", " ")}`, `requested ${r.requestedSeq}, oldest ${r.oldestSeq}, head ${r.headSeq}`);
}

/** onSnapshotDone ends a resync: gauges the snapshot did not refresh are gone from the server. */
function onSnapshotDone(): void {
  if (resyncText === undefined) return;
  const gone = [...gauges.values()].filter((g) => g.stale);
  for (const g of gone) removeGauge(g);
  queueSummary();
  const kept = gauges.size;
  const removed =
    gone.length === 0
      ? ""
      : ` ${gone.length} gauge${gone.length === 1 ? "" : "s"} with no reading on the server since then ${gone.length === 1 ? "was" : "were"} removed (${gone.map((g) => g.key).join(", ")}).`;
  $("resync-text").textContent =
    `${resyncText} ${kept} gauge${kept === 1 ? " was" : "s were"} rebuilt from ${kept === 1 ? "its" : "each gauge's"} latest reading on the server; readings and crossings in between were not replayed.` + removed;
  if (gone.length > 0) log("resync", `Removed ${gone.length} gauge${gone.length === 1 ? "" : "s"} with no reading since the resync`, gone.map((g) => g.key).join(", "));
  resyncText = undefined;
}

function onConnection(e: ConnectionEvent): void {
  switch (e.state) {
    case "connecting":
      setStatus("connecting", e.attempt > 0 ? `reconnecting · attempt ${e.attempt + 1}` : e.cursor.seq > 0n ? `resuming after seq ${e.cursor.seq}` : "opening stream…");
      return;
    case "open":
      $("epoch").textContent = formatEpoch(e.epoch);
      if (shown !== "resynced") setStatus("replaying", "catching up…");
      return;
    case "caught_up":
      // Every stream reports it (the item comes only on a transition to live).
      setStatus("live", `caught up at seq ${e.headSeq}`);
      return;
    case "reconnecting": {
      const secs = (e.delayMs / 1000).toFixed(1);
      if (e.resync) {
        setStatus("connecting", `resubscribing from a snapshot in ${secs} s`);
      } else if (e.error) {
        const why = e.error.rawMessage || "network error";
        log("conn", "Connection lost", `${why} · retrying in ${secs} s`);
        setStatus("connecting", `${why} · retry in ${secs} s`);
      } else {
        log("conn", "Stream ended by the server", `resuming in ${secs} s`);
        setStatus("connecting", `resuming in ${secs} s`);
      }
      return;
    }
  }
}

let renderQueued = false;
let lastCommit: Date | undefined;
function queueCursor(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    const c = sub.cursor;
    $("cursor").textContent = formatCursor(c);
    $("cursor-seq").textContent = c.seq.toString();
    $("cursor-fact").textContent = c.fact === 0 ? "0 (commit done)" : String(c.fact);
    if (c.epoch) $("epoch").textContent = formatEpoch(c.epoch);
    if (lastCommit) $("last-commit").textContent = fmtTime(lastCommit);
  });
}

function handle(item: StreamItem): void {
  switch (item.kind) {
    case "fact":
      lastCommit = item.eventTime ?? lastCommit;
      if (item.type === "gauge.level") onLevel(item);
      else if (item.type === "gauge.threshold") onThreshold(item);
      break;
    case "caught_up":
      onSnapshotDone();
      log("live", "Live", `caught up at seq ${item.headSeq}`);
      break;
    case "resynced":
      onResynced(item);
      break;
  }
  queueCursor();
}

const transport = createGrpcWebTransport({ baseUrl: window.location.origin });
const sub = subscribe(transport, {
  snapshot: "latest_per_key",
  onUnservable: "snapshot_inline",
  topics: ["gauges"],
  onConnection,
});

$("resync-close").addEventListener("click", () => {
  $("resync").hidden = true;
});

async function run(): Promise<void> {
  setStatus("connecting", "opening stream…");
  try {
    for await (const item of sub) handle(item);
    setStatus("stopped", "stream closed");
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    setStatus("stopped", msg);
    log("severe", "Stream stopped", msg);
  }
}
void run();
