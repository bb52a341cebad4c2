// Alerts: a log entry and a spoken announcement whenever a gauge enters or
// leaves warning or severe (also when it first appears in one, or is removed
// by a resync while in one), acknowledgements kept in sessionStorage, an
// optional sound for severe, and gauge notes.
import { $, el, fmtLevel, fmtTime, session, type GaugeState } from "./dom.js";

const LOG_MAX = 80;
const ACKS = "ringcast.console.acks";
const SOUND = "ringcast.console.sound";

/** What the alert is about: a change of state, a first reading, a removal. */
export type AlertKind = "enter" | "leave" | "first" | "removed";

/** Acknowledged states per gauge key: an acknowledgement lasts while the gauge stays in that state. */
let acks: Record<string, GaugeState> = session.get(ACKS, {});
let sound = session.get(SOUND, false);

export function isAcknowledged(key: string, state: GaugeState): boolean {
  return state !== "normal" && acks[key] === state;
}

function setAck(key: string, state: GaugeState | undefined): void {
  if (state === undefined) delete acks[key];
  else acks[key] = state;
  session.set(ACKS, acks);
}

// ---- announcements ------------------------------------------------------

let queued: { text: string; urgent: boolean }[] = [];
let announceTimer: ReturnType<typeof setTimeout> | undefined;

/** announce speaks text through the aria-live regions, batching what comes together. */
export function announce(text: string, urgent = false): void {
  queued.push({ text, urgent });
  if (announceTimer) return;
  announceTimer = setTimeout(() => {
    announceTimer = undefined;
    const batch = queued;
    queued = [];
    const urgentText = batch.filter((b) => b.urgent).map((b) => b.text);
    const politeText = batch.filter((b) => !b.urgent).map((b) => b.text);
    if (urgentText.length) $("announce-urgent").textContent = summarise(urgentText);
    if (politeText.length) $("announce").textContent = summarise(politeText);
  }, 400);
}

function summarise(texts: string[]): string {
  return texts.length <= 4 ? texts.join(". ") : `${texts.slice(0, 3).join(". ")}. And ${texts.length - 3} more.`;
}

// ---- sound --------------------------------------------------------------

let audio: AudioContext | undefined;
function beep(): void {
  if (!sound) return;
  try {
    audio ??= new AudioContext();
    const t = audio.currentTime;
    for (const at of [0, 0.35]) {
      const o = audio.createOscillator();
      const g = audio.createGain();
      o.frequency.value = 880;
      g.gain.setValueAtTime(0.0001, t + at);
      g.gain.exponentialRampToValueAtTime(0.2, t + at + 0.02);
      g.gain.exponentialRampToValueAtTime(0.0001, t + at + 0.25);
      o.connect(g).connect(audio.destination);
      o.start(t + at);
      o.stop(t + at + 0.3);
    }
  } catch {
    /* no audio output: the visual alert stands */
  }
}

function renderSound(): void {
  const b = $("sound");
  b.setAttribute("aria-pressed", String(sound));
  b.textContent = sound ? "Sound for severe: on" : "Sound for severe: off";
}

// ---- the alert log ------------------------------------------------------

interface AlertInput {
  key: string;
  name: string;
  kind: AlertKind;
  from?: GaugeState;
  to: GaugeState;
  level: number;
  at: Date;
  /** e.g. "from the snapshot after a resync". */
  context?: string;
}

const WORD: Record<GaugeState, string> = { normal: "normal", warning: "WARNING", severe: "SEVERE" };
const ICON: Record<GaugeState, string> = { normal: "●", warning: "▲", severe: "◆" };

function alertText(a: AlertInput): string {
  switch (a.kind) {
    case "first":
      return `${a.name}: ${WORD[a.to]} (first reading)`;
    case "removed":
      return `${a.name}: removed while ${WORD[a.to]}`;
    case "enter":
      return `${a.name}: ${WORD[a.from ?? "normal"]} → ${WORD[a.to]}`;
    case "leave":
      return `${a.name}: ${WORD[a.from ?? "normal"]} → ${WORD[a.to]}`;
  }
}

function trim(list: HTMLElement): void {
  while (list.children.length > LOG_MAX) list.lastElementChild!.remove();
}

/** alert logs and announces a change of a gauge's alert state. */
export function alert(a: AlertInput): void {
  if (a.kind === "leave" || a.kind === "removed") setAck(a.key, undefined);
  else if (acks[a.key] !== undefined && acks[a.key] !== a.to) setAck(a.key, undefined);
  const li = el("li", `alert k-${a.to}`);
  li.dataset["alert"] = a.kind;
  li.dataset["gaugeKey"] = a.key;
  li.dataset["state"] = a.to;
  const icon = el("span", "a-icon", ICON[a.to]);
  icon.setAttribute("aria-hidden", "true");
  const body = el("div", "a-body");
  body.append(el("span", "a-text", alertText(a)));
  const detail = `${fmtLevel(a.level)} m at ${fmtTime(a.at)}${a.context ? ` · ${a.context}` : ""}`;
  body.append(el("span", "a-detail", detail));
  li.append(el("time", undefined, fmtTime(a.at)), icon, body);
  if (a.to !== "normal" && a.kind !== "removed") {
    const btn = el("button", "ack", "Acknowledge");
    btn.type = "button";
    btn.dataset["ackKey"] = a.key;
    btn.dataset["ackState"] = a.to;
    btn.setAttribute("aria-label", `Acknowledge ${alertText(a)}`);
    li.append(btn);
  }
  const list = $("alert-log");
  list.prepend(li);
  trim(list);
  renderAcks();
  const urgent = a.to === "severe" && a.kind !== "removed";
  announce(alertText(a).replace(/→/g, "to"), urgent);
  if (urgent && !isAcknowledged(a.key, a.to)) beep();
}

/** note logs a gauge.note fact. */
export function noteEntry(key: string, name: string, text: string, at: Date): void {
  const li = el("li", "alert k-note");
  li.dataset["note"] = "";
  li.dataset["gaugeKey"] = key;
  const icon = el("span", "a-icon", "✎");
  icon.setAttribute("aria-hidden", "true");
  const body = el("div", "a-body");
  body.append(el("span", "a-text", `${name}: note`), el("span", "a-detail", text));
  li.append(el("time", undefined, fmtTime(at)), icon, body);
  const list = $("alert-log");
  list.prepend(li);
  trim(list);
  announce(`Note on ${name}: ${text}`);
}

/** renderAcks marks acknowledged entries and counts the open ones. */
export function renderAcks(): void {
  const current = currentOf;
  let open = 0;
  const seen = new Set<string>();
  for (const b of document.querySelectorAll<HTMLButtonElement>("#alert-log button.ack")) {
    const key = b.dataset["ackKey"]!;
    const state = b.dataset["ackState"] as GaugeState;
    const done = isAcknowledged(key, state);
    const li = b.closest<HTMLElement>("li")!;
    li.dataset["acknowledged"] = String(done);
    b.disabled = done;
    b.textContent = done ? "Acknowledged" : "Acknowledge";
    // A state the gauge has since left needs no acknowledgement.
    b.hidden = !done && current(key) !== state;
    // Count each gauge's newest unacknowledged entry once, if it still holds.
    if (!done && !seen.has(key) && current(key) === state) open++;
    seen.add(key);
  }
  $("alert-open").textContent = open === 0 ? "none open" : `${open} to acknowledge`;
  $("alert-open").dataset["open"] = String(open);
}

let currentOf: (key: string) => GaugeState | undefined = () => undefined;

/** setupAlerts wires the sound toggle and the acknowledge buttons; current tells a gauge's state now. */
export function setupAlerts(current: (key: string) => GaugeState | undefined, onAck: () => void): void {
  currentOf = current;
  renderSound();
  $("sound").addEventListener("click", () => {
    sound = !sound;
    session.set(SOUND, sound);
    renderSound();
  });
  $("alert-log").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button.ack");
    if (!b) return;
    setAck(b.dataset["ackKey"]!, b.dataset["ackState"] as GaugeState);
    renderAcks();
    onAck();
  });
}
