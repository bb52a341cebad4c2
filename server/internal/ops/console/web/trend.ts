// Level history per gauge: points from the retained read and the live
// stream, the gauge's usual reporting interval, its rate of rise, and the
// sparkline drawn from them.

/** One reading: when it was committed, its level, and the commit (epoch:seq) it came in. */
export interface Point {
  t: number;
  v: number;
  id: string;
}

/** How far back a gauge's history is kept, and the span a sparkline shows at most. */
export const KEEP_MS = 30 * 60_000;
export const SPARK_MS = 15 * 60_000;
const KEEP_POINTS = 5000;
const RATE_MS = 5 * 60_000;
/** A rate from less than this much history is noise, not a trend. */
export const RATE_MIN_MS = 10_000;

/**
 * addPoints merges readings into a sorted history, once per commit (a
 * reading can come from the retained read, a snapshot and the live stream),
 * and drops what is older than KEEP_MS. It returns whether anything changed.
 */
export function addPoints(hist: Point[], pts: readonly Point[]): boolean {
  let changed = false;
  for (const p of pts) {
    if (!Number.isFinite(p.t) || !Number.isFinite(p.v)) continue;
    let i = hist.length;
    while (i > 0 && hist[i - 1]!.t > p.t) i--;
    // Same commit already held (it sits at the same time)?
    let dup = false;
    for (let j = i - 1; j >= 0 && hist[j]!.t === p.t; j--) if (hist[j]!.id === p.id) dup = true;
    for (let j = i; j < hist.length && hist[j]!.t === p.t; j++) if (hist[j]!.id === p.id) dup = true;
    if (dup) continue;
    hist.splice(i, 0, p);
    changed = true;
  }
  const newest = hist.at(-1)?.t ?? 0;
  let drop = 0;
  while (drop < hist.length && (hist[drop]!.t < newest - KEEP_MS || hist.length - drop > KEEP_POINTS)) drop++;
  if (drop > 0) hist.splice(0, drop);
  return changed;
}

/** usualInterval is the median gap between the last readings (undefined with fewer than two). */
export function usualInterval(hist: readonly Point[]): number | undefined {
  const gaps: number[] = [];
  for (let i = Math.max(1, hist.length - 20); i < hist.length; i++) {
    const g = hist[i]!.t - hist[i - 1]!.t;
    if (g > 0) gaps.push(g);
  }
  if (gaps.length === 0) return undefined;
  gaps.sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)];
}

/**
 * rateOfRise is the least-squares slope of the last five minutes of
 * readings in m/h, with the span it covers (undefined with fewer than three
 * readings or under RATE_MIN_MS of history).
 */
export function rateOfRise(hist: readonly Point[]): { perHour: number; spanMs: number } | undefined {
  const last = hist.at(-1);
  if (!last) return undefined;
  let i = hist.length - 1;
  while (i > 0 && hist[i - 1]!.t >= last.t - RATE_MS) i--;
  const pts = hist.slice(i);
  if (pts.length < 3 || last.t - pts[0]!.t < RATE_MIN_MS) return undefined;
  const t0 = pts[0]!.t;
  let sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const p of pts) {
    const x = (p.t - t0) / 3_600_000;
    sx += x;
    sy += p.v;
    sxx += x * x;
    sxy += x * p.v;
  }
  const n = pts.length;
  const d = n * sxx - sx * sx;
  return d === 0 ? undefined : { perHour: (n * sxy - sx * sy) / d, spanMs: last.t - t0 };
}

/**
 * eta says when the next threshold is crossed at this rate, in minutes, or
 * undefined when not rising towards one (or more than a day away).
 */
export function eta(level: number, rate: number | undefined, warning: number, severe: number): { what: "warning" | "severe"; minutes: number } | undefined {
  if (rate === undefined || rate <= 0) return undefined;
  const target = warning > 0 && level < warning ? { what: "warning" as const, at: warning } : severe > 0 && level < severe ? { what: "severe" as const, at: severe } : undefined;
  if (!target) return undefined;
  const minutes = ((target.at - level) / rate) * 60;
  return minutes <= 24 * 60 ? { what: target.what, minutes } : undefined;
}

const SVG = "http://www.w3.org/2000/svg";
const W = 240;
const H = 44;

function svgEl(tag: string, attrs: Record<string, string | number>): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** The epoch part of a point's commit id ("epoch:seq"). */
const epochOf = (id: string) => id.slice(0, id.indexOf(":"));

/**
 * sparkPath is the path data of a sparkline through pts (sorted by time),
 * placed by x and y: at most one vertex per half unit across (the last
 * reading of each), and a break in the line — a new "M" — where no reading
 * came for longer than gapMs, or where the epoch changes: the commits
 * between readings of two epochs (a restarted server, a stream created
 * again) are unknown, however short the pause, so the line never joins them.
 */
export function sparkPath(pts: readonly Point[], gapMs: number, x: (t: number) => number, y: (v: number) => number): string {
  const vs: { x: number; y: number; move: boolean }[] = [];
  let prev: Point | undefined;
  for (const p of pts) {
    const px = Math.round(x(p.t) * 2) / 2;
    const move = prev === undefined || p.t - prev.t > gapMs || epochOf(p.id) !== epochOf(prev.id);
    const lastV = vs.at(-1);
    if (lastV && lastV.x === px && !move) lastV.y = y(p.v);
    else vs.push({ x: px, y: y(p.v), move });
    prev = p;
  }
  return vs.map((v) => `${v.move ? "M" : "L"}${v.x.toFixed(1)} ${v.y.toFixed(1)}`).join("");
}

/**
 * drawSparkline redraws svg with the readings of the last SPARK_MS (or of
 * all the history when shorter), the warning and severe lines, and a dot on
 * the latest reading. A stretch with no reading for longer than five usual
 * intervals, and a change of epoch, are left as breaks in the line (see
 * sparkPath). It returns the span shown, ms.
 */
export function drawSparkline(svg: SVGSVGElement, hist: readonly Point[], warning: number, severe: number, now: number): number {
  const from = Math.max(now - SPARK_MS, Math.min(hist[0]?.t ?? now, now - 60_000));
  const pts = hist.filter((p) => p.t >= from);
  const span = now - from;
  let lo = Math.min(...pts.map((p) => p.v), warning > 0 ? warning : Infinity);
  let hi = Math.max(...pts.map((p) => p.v), severe > 0 ? severe : -Infinity);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) {
    lo = 0;
    hi = 1;
  }
  const pad = Math.max((hi - lo) * 0.1, 0.05);
  lo = Math.max(0, lo - pad);
  hi += pad;
  const x = (t: number) => ((t - from) / span) * W;
  const y = (v: number) => H - ((v - lo) / (hi - lo)) * H;
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("preserveAspectRatio", "none");
  for (const [cls, v] of [["warn", warning], ["severe", severe]] as const) {
    if (v > 0) svg.append(svgEl("line", { class: `s-${cls}`, x1: 0, x2: W, y1: y(v), y2: y(v), "vector-effect": "non-scaling-stroke" }));
  }
  const d = sparkPath(pts, 5 * (usualInterval(hist) ?? Infinity), x, y);
  if (d) svg.append(svgEl("path", { class: "s-line", d, "vector-effect": "non-scaling-stroke" }));
  const last = pts.at(-1);
  if (last) svg.append(svgEl("circle", { class: "s-dot", cx: x(last.t), cy: y(last.v), r: 2.5 }));
  svg.dataset["points"] = String(pts.length);
  return span;
}
