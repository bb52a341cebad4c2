// The ringcast web console: live river gauges from the demo feed, the
// stream's state and the client's cursor. Plain DOM over the TS client.
import { Code, ConnectError } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";

import {
  Reason,
  formatCursor,
  formatEpoch,
  subscribe,
  type ConnectionEvent,
  type Cursor,
  type Subscription,
  type FactItem,
  type ResyncedSignal,
  type StreamItem,
} from "../../../../../clients/ts/src/index.js";
import { noteEntry, renderAcks, setupAlerts } from "./alerts.js";
import { askForToken, takeFragmentToken, tokenOption } from "./auth.js";
import { $, num, plural, stateOf, str } from "./dom.js";
import {
  addHistory,
  gauges,
  moveGauge,
  newGauge,
  queueRender,
  removeGauge,
  renderSummary,
  setNote,
  setOutage,
  settle,
  tickAll,
  tickGauge,
} from "./gauges.js";
import { beginOutage, connectionLost, endOutage, logEvent, renderOutage, retryAt, setStatus, shownStatus, stopped, unstopped } from "./status.js";
import { addPoints, type Point } from "./trend.js";

const transport = createGrpcWebTransport({ baseUrl: window.location.origin });

/** Caught up on the current stream. */
let live = false;
/** Between a "resynced" item and the "caught_up" that ends its snapshot. */
let resync: { text: string } | undefined;
/** A stream that ended cleanly and is not live again within this long counts as an outage. */
const CLEAN_END_GRACE_MS = 3000;
let graceTimer: ReturnType<typeof setTimeout> | undefined;

const gaugeKeyOf = (f: FactItem) => str(f.data?.["gauge"]) || f.topic.split("/")[2] || f.key;
const pointOf = (f: FactItem, v: number): Point => ({ t: f.eventTime?.getTime() ?? Date.now(), v, id: `${f.epoch}:${f.seq}` });

function onLevel(f: FactItem): void {
  const d = f.data ?? {};
  const key = f.key || str(d["gauge"]);
  if (!key) return;
  let g = gauges.get(key);
  const prev = g?.state;
  // A fact may carry only some fields: what it lacks keeps its last value.
  const catchment = str(d["catchment"], g?.catchment ?? f.topic.split("/")[1] ?? "other");
  if (!g) g = newGauge(key, catchment);
  else if (g.catchment !== catchment) moveGauge(g, catchment);
  g.name = str(d["name"], g.name);
  g.level = num(d["level_m"], g.level);
  g.trend = str(d["trend"], g.trend);
  g.warning = num(d["warning_m"], g.warning);
  g.severe = num(d["severe_m"], g.severe);
  if (d["state"] !== undefined) g.state = stateOf(d["state"]);
  else if (d["level_m"] !== undefined && g.severe > 0) g.state = g.level >= g.severe ? "severe" : g.warning > 0 && g.level >= g.warning ? "warning" : "normal";
  const at = f.eventTime ?? new Date();
  g.readingAt = at.getTime();
  if (typeof d["level_m"] === "number") addPoints(g.points, [pointOf(f, g.level)]);
  // Any reading that arrives now is newer than the outage; the card is current again once the stream is.
  g.resyncPending = false;
  g.awaitingLive = false;
  settle(g, prev, at, resync ? "from the snapshot after a resync" : undefined);
}

const notesSeen = new Set<string>();
function onNote(f: FactItem): void {
  const key = gaugeKeyOf(f);
  const text = str(f.data?.["text"]) || JSON.stringify(f.data ?? {});
  if (!key) return;
  const id = `${f.epoch}:${f.seq}:${f.index}`;
  if (notesSeen.has(id)) return;
  notesSeen.add(id);
  const at = f.eventTime ?? new Date();
  setNote(key, text, at.getTime());
  noteEntry(key, gauges.get(key)?.name ?? key, text, at);
}

// ---- history ------------------------------------------------------------

let historyRunning = false;
let historyAgain = false;
/** The retained history has been read once (it is read again after each resync). */
let historyLoaded = false;

/**
 * readHistory is a bounded read of the events the server retains (up to its
 * head), to draw each gauge's recent levels; run on load and after each
 * resync. Readings it shares with the live stream are kept once.
 */
async function readHistory(): Promise<void> {
  if (historyRunning) {
    historyAgain = true;
    return;
  }
  historyRunning = true;
  try {
    do {
      historyAgain = false;
      const per = new Map<string, Point[]>();
      const h = subscribe(transport, { snapshot: "retained", topics: ["gauges"], endAtHead: true, signal: AbortSignal.timeout(30_000), ...tokenOption() });
      for await (const item of h) {
        if (item.kind !== "fact" || item.type !== "gauge.level") continue;
        const v = item.data?.["level_m"];
        const key = item.key || str(item.data?.["gauge"]);
        if (typeof v !== "number" || !key) continue;
        const pts = per.get(key) ?? [];
        pts.push(pointOf(item, v));
        per.set(key, pts);
      }
      for (const [key, pts] of per) {
        if (addHistory(key, pts)) queueRender(gauges.get(key)!);
      }
      historyLoaded = true;
    } while (historyAgain);
  } catch (e) {
    logEvent("conn", "Could not read the level history", e instanceof Error ? e.message : String(e));
  } finally {
    historyRunning = false;
  }
}

// ---- stream -------------------------------------------------------------

/** Why a resync happened, for every reason the proto defines (a new one fails the typecheck here). */
const REASONS: Readonly<Record<Exclude<Reason, Reason.UNSPECIFIED>, string>> = {
  [Reason.EPOCH_MISMATCH]: "the server restarted (new epoch)",
  [Reason.CURSOR_TOO_OLD]: "the events after our position left the server's window",
  [Reason.CURSOR_AHEAD]: "our position is ahead of the server's",
  [Reason.SUBSCRIBER_LAGGING]: "this page fell too far behind the live stream",
  [Reason.FACT_OUT_OF_RANGE]: "the commit we stopped inside is gone",
  [Reason.MALFORMED_CURSOR]: "the server could not read our position",
  [Reason.COMMIT_MISMATCH]: "our position names a commit the server's log does not hold (a restored or replaced store)",
};

/** A reason's label: its name (reasonName) in words, "epoch mismatch". */
const words = (reason: string) => reason.toLowerCase().replaceAll("_", " ");

function onResynced(r: ResyncedSignal): void {
  live = false;
  const now = Date.now();
  // Everything on screen predates what was missed: stale until the snapshot refreshes it.
  for (const g of gauges.values()) {
    g.resyncPending = true;
    if (!g.awaitingLive) g.staleSince = now;
    tickGauge(g, now); // at once, even if the snapshot removes it before the next frame
    queueRender(g);
  }
  const why = REASONS[r.reason as keyof typeof REASONS] ?? words(r.reasonName);
  const text =
    `Missed events: ${why}. Asked to resume after seq ${r.requestedSeq}` +
    (r.previousEpoch && r.previousEpoch !== r.epoch ? ` of epoch ${formatEpoch(r.previousEpoch)}` : "") +
    `; the server holds seq ${r.oldestSeq}–${r.headSeq}` +
    (r.previousEpoch !== r.epoch ? ` of epoch ${formatEpoch(r.epoch)}` : "") +
    `.`;
  resync = { text };
  $("resync-when").textContent = `at ${new Date(now).toLocaleTimeString("en-GB")} · ${words(r.reasonName)}`;
  $("resync-text").textContent = `${text} Rebuilding the gauges from each gauge's latest reading on the server…`;
  $("resync").hidden = false;
  setStatus("resynced", `${words(r.reasonName)} · seq ${r.requestedSeq} → snapshot at ${r.headSeq}`);
  logEvent("resync", `Resynced: ${words(r.reasonName)}`, text);
}

/** onSnapshotDone ends a resync: gauges the snapshot did not refresh are gone from the server. */
function onSnapshotDone(): void {
  if (resync === undefined) return;
  const gone = [...gauges.values()].filter((g) => g.resyncPending);
  for (const g of gone) removeGauge(g, "no reading on the server since the resync");
  const kept = gauges.size;
  const removed =
    gone.length === 0
      ? ""
      : ` ${plural(gone.length, "gauge")} with no reading on the server since then ${gone.length === 1 ? "was" : "were"} removed (${gone.map((g) => g.key).join(", ")}).`;
  const summary = `${kept} gauge${kept === 1 ? " was" : "s were"} rebuilt from ${kept === 1 ? "its" : "each gauge's"} latest reading on the server; readings and crossings in between were not replayed.${removed}`;
  $("resync-text").textContent = `${resync.text} ${summary}`;
  logEvent("resync", "Resync complete", summary);
  resync = undefined;
  renderSummary();
  void readHistory();
}

function outage(at: number, why: string): void {
  if (!beginOutage(at, why)) return;
  live = false;
  for (const g of gauges.values()) {
    g.awaitingLive = true;
    g.staleSince = at;
  }
  setOutage(at);
}

function onConnection(e: ConnectionEvent): void {
  switch (e.state) {
    case "connecting":
      retryAt(undefined);
      setStatus("connecting", e.attempt > 0 ? `reconnecting · attempt ${e.attempt + 1}` : e.cursor.seq > 0n ? `resuming after seq ${e.cursor.seq}` : "opening stream…");
      return;
    case "open":
      $("epoch").textContent = formatEpoch(e.epoch);
      if (shownStatus() !== "resynced") setStatus("replaying", "catching up…");
      return;
    case "caught_up": {
      // Every stream reports it (the item comes only on a transition to live).
      live = true;
      clearTimeout(graceTimer);
      const ms = endOutage(Date.now());
      if (ms !== undefined) {
        setOutage(undefined);
        logEvent("live", "Current again", `after ${Math.round(ms / 1000)} s; gauges without a reading since the outage stay stale until they report`);
      }
      setStatus("live", `caught up at seq ${e.headSeq}`);
      return;
    }
    case "reconnecting": {
      live = false;
      const now = Date.now();
      retryAt(now + e.delayMs);
      const secs = (e.delayMs / 1000).toFixed(1);
      if (e.resync) {
        setStatus("connecting", `resubscribing from a snapshot in ${secs} s`);
      } else if (e.error) {
        const why = e.error.rawMessage || "network error";
        connectionLost(why, now);
        outage(now, why);
        setStatus("connecting", `${why}`);
      } else {
        logEvent("conn", "Stream ended by the server", `resuming in ${secs} s`);
        setStatus("connecting", `resuming`);
        clearTimeout(graceTimer);
        graceTimer = setTimeout(() => {
          if (!live) outage(now, "the stream ended and has not resumed");
        }, CLEAN_END_GRACE_MS);
      }
      return;
    }
  }
}

let cursorQueued = false;
let lastCommit: Date | undefined;
function queueCursor(): void {
  if (cursorQueued) return;
  cursorQueued = true;
  requestAnimationFrame(() => {
    cursorQueued = false;
    const c = sub.cursor;
    $("cursor").textContent = formatCursor(c);
    $("cursor-seq").textContent = c.seq.toString();
    $("cursor-fact").textContent = c.fact === 0 ? "0 (commit done)" : String(c.fact);
    if (c.epoch) $("epoch").textContent = formatEpoch(c.epoch);
    if (lastCommit) $("last-commit").textContent = lastCommit.toLocaleTimeString("en-GB");
  });
}

function handle(item: StreamItem): void {
  switch (item.kind) {
    case "fact":
      lastCommit = item.eventTime ?? lastCommit;
      if (item.type === "gauge.level") onLevel(item);
      else if (item.type === "gauge.note") onNote(item);
      break;
    case "caught_up":
      onSnapshotDone();
      if (!historyLoaded) void readHistory();
      logEvent("live", "Live", `caught up at seq ${item.headSeq}`);
      if (item.snapshotEvictedKeys > 0n) {
        // The server's latest-reading table is bounded (--state-keys): gauges quiet the longest may be missing.
        logEvent("resync", "Snapshot may be incomplete", `the server has evicted ${item.snapshotEvictedKeys} keys from its latest-reading table; gauges not updated for the longest time may be missing until they report`);
      }
      break;
    case "resynced":
      onResynced(item);
      break;
  }
  queueCursor();
}

let sub: Subscription;
const open = (cursor: Cursor | undefined) =>
  subscribe(transport, {
    snapshot: "latest_per_key",
    onUnservable: "snapshot_inline",
    topics: ["gauges"],
    onConnection,
    ...tokenOption(),
    ...(cursor ? { cursor } : {}),
  });

$("resync-close").addEventListener("click", () => {
  $("resync").hidden = true;
});
$("reconnect-now").addEventListener("click", () => {
  if (sub.reconnectNow()) logEvent("conn", "Reconnect requested", "by the operator");
});
setupAlerts(
  (key) => gauges.get(key)?.state,
  () => {
    for (const g of gauges.values()) queueRender(g);
  },
);

setInterval(() => {
  const now = Date.now();
  renderOutage(now);
  tickAll(now);
}, 500);
// Sparklines slide with time even for a gauge that stopped reporting.
setInterval(() => {
  for (const g of gauges.values()) queueRender(g);
}, 10_000);

async function run(): Promise<void> {
  takeFragmentToken();
  setStatus("connecting", "opening stream…");
  renderAcks();
  let cursor: Cursor | undefined;
  for (;;) {
    sub = open(cursor);
    try {
      for await (const item of sub) handle(item);
      setStatus("stopped", "stream closed");
      stopped("the stream closed");
      return;
    } catch (e) {
      const err = ConnectError.from(e);
      const msg = err.rawMessage || err.message;
      setStatus("stopped", err.code === Code.Unauthenticated || err.code === Code.PermissionDenied ? "not authorised" : msg);
      outage(Date.now(), msg);
      if (err.code !== Code.Unauthenticated && err.code !== Code.PermissionDenied) {
        stopped(msg);
        logEvent("severe", "Stream stopped", msg);
        return;
      }
      // Not authorised: say so plainly and wait for a token, instead of retrying.
      stopped("not authorised", "Enter an access token below to connect.");
      logEvent("severe", "Not authorised", msg);
      await askForToken(err.code === Code.PermissionDenied ? "permission_denied" : "unauthenticated", msg);
      unstopped();
      cursor = sub.cursor;
      setStatus("connecting", "connecting with the token…");
    }
  }
}
void run();
