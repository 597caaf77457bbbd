/**
 * Headless Chromium (Debian's `chromium` package) for tests that check a page as a browser
 * renders it: the DOM after scripts ran (`--dump-dom`), a screenshot, and the browser's own
 * network log. Every run gets a fresh profile directory, removed afterwards; background
 * networking, component updates, sync and QUIC are off so the browser itself fetches nothing.
 *
 * @module
 */

import { run } from "../../lib/command.ts";

/** The flags every run uses (root needs --no-sandbox). */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-extensions",
  "--hide-scrollbars",
];

/** Options for {@linkcode chromium}. */
export interface ChromiumOptions {
  /** Window size, `W,H` (default `1400,1000`). */
  windowSize?: string;
  /** Also write the browser's network log (NetLog JSON) here. */
  netLog?: string;
  /**
   * Collect the page's console messages here (Chromium's own log on stderr, `--enable-logging`):
   * a Content-Security-Policy violation is one ("... violates the following Content Security
   * Policy directive ...").
   */
  console?: string[];
}

/**
 * Runs headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=PATH`) and returns
 * its standard output (the serialised DOM for `--dump-dom`).
 *
 * @throws {CommandError} when chromium fails.
 */
export async function chromium(
  url: string,
  mode: string,
  options: ChromiumOptions = {},
): Promise<string> {
  const profile = await Deno.makeTempDir({ prefix: "mesh-chromium-" });
  try {
    const args = [
      ...FLAGS,
      `--user-data-dir=${profile}`,
      `--window-size=${options.windowSize ?? "1400,1000"}`,
      ...(options.netLog ? [`--log-net-log=${options.netLog}`] : []),
      ...(options.console ? ["--enable-logging=stderr", "--v=0"] : []),
      mode,
      url,
    ];
    const result = await run(["chromium", ...args], { timeoutMs: 120_000 });
    if (options.console) {
      options.console.push(
        ...result.stderr.split("\n").filter((l) => /:CONSOLE[:(]/.test(l)),
      );
    }
    return result.stdout;
  } finally {
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  }
}
