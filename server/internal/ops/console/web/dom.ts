// Small DOM and formatting helpers shared by the console's modules.

export type GaugeState = "normal" | "warning" | "severe";

export const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`console: missing #${id}`);
  return e as T;
};

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const timeFmt = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
/** fmtTime: HH:MM:SS in local time. */
export const fmtTime = (d: Date | number = Date.now()) => timeFmt.format(d);
export const fmtLevel = (m: number) => m.toFixed(3);
export const titleCase = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
export const plural = (n: number, one: string, many = one + "s") => `${n} ${n === 1 ? one : many}`;

/** fmtAge: "4 s ago", "3 min ago", "2 h 5 min ago". */
export function fmtAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  return `${Math.floor(m / 60)} h ${m % 60} min ago`;
}

/** fmtDuration: "0:45", "12:03", "1:02:03". */
export function fmtDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const two = (n: number) => String(n).padStart(2, "0");
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}:${two(m)}:${two(s % 60)}` : `${m}:${two(s % 60)}`;
}

/** fmtEvery: a reporting interval in words. */
export function fmtEvery(ms: number): string {
  if (ms < 1000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

export const rank = (s: GaugeState) => (s === "severe" ? 2 : s === "warning" ? 1 : 0);

export function num(v: unknown, d = 0): number {
  return typeof v === "number" && Number.isFinite(v) ? v : d;
}
export function str(v: unknown, d = ""): string {
  return typeof v === "string" ? v : d;
}
export function stateOf(v: unknown): GaugeState {
  return v === "warning" || v === "severe" ? v : "normal";
}

/** session reads and writes sessionStorage as JSON, ignoring a storage that refuses. */
export const session = {
  get<T>(key: string, d: T): T {
    try {
      const v = sessionStorage.getItem(key);
      return v === null ? d : (JSON.parse(v) as T);
    } catch {
      return d;
    }
  },
  set(key: string, v: unknown): void {
    try {
      sessionStorage.setItem(key, JSON.stringify(v));
    } catch {
      /* private mode or full: the setting lasts for this page only */
    }
  },
};
