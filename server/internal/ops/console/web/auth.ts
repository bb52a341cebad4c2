// Access tokens for a server that requires them: taken from the URL
// fragment (#token=…) or asked for, kept in sessionStorage for this tab, and
// a plain "not authorised" when the server refuses — never a retry loop.
import { $, session } from "./dom.js";

const KEY = "ringcast.console.token";

let token: string | undefined = session.get<string | undefined>(KEY, undefined) || undefined;

/** takeFragmentToken moves a #token=… from the address into sessionStorage (and out of the address bar and history). */
export function takeFragmentToken(): void {
  const m = /(?:^#|&)token=([^&]*)/.exec(window.location.hash);
  if (!m) return;
  const t = decodeURIComponent(m[1] ?? "").trim();
  if (t) setToken(t);
  history.replaceState(null, "", window.location.pathname + window.location.search);
}

function setToken(t: string | undefined): void {
  token = t;
  session.set(KEY, t ?? "");
}

/** currentToken is the token to send, if any. */
export const currentToken = () => token;

/**
 * tokenOption is the subscribe option that sends the token, if there is one:
 * a function, so a reconnect (and the client's one retry after a token's
 * expiry) always sends the token entered last.
 */
export function tokenOption(): { token?: () => Promise<string> } {
  return token ? { token: async () => token ?? "" } : {};
}

/**
 * askForToken shows why the server refused and waits for the operator to
 * enter a token. "unauthenticated": the server needs a (valid) token;
 * "permission_denied": the token does not grant the gauges.
 */
export function askForToken(why: "unauthenticated" | "permission_denied", detail: string): Promise<void> {
  const box = $("auth");
  const refused = token !== undefined;
  $("auth-title").textContent =
    why === "permission_denied"
      ? "Not authorised: this token does not allow reading the gauges"
      : refused
        ? "Not authorised: the server refused the token (expired or invalid)"
        : "This server requires an access token";
  $("auth-detail").textContent = `The server says: “${detail}”. Enter ${refused ? "another" : "a"} token to connect; it is kept for this tab only.`;
  box.hidden = false;
  const input = $<HTMLInputElement>("auth-token");
  input.value = "";
  input.focus();
  return new Promise((resolve) => {
    const form = $<HTMLFormElement>("auth-form");
    const submit = (e: Event) => {
      e.preventDefault();
      const t = input.value.trim();
      if (!t) return;
      form.removeEventListener("submit", submit);
      setToken(t);
      box.hidden = true;
      resolve();
    };
    form.addEventListener("submit", submit);
  });
}
