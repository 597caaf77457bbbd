/**
 * Durations written by people: `90s`, `15m`, `36h`, `14d`, `2w`, `1h30m`. A duration always
 * carries its unit: a bare number is refused, naming the form it most likely meant.
 *
 * @module
 */

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** The units a duration is written in. */
export type DurationUnit = "ms" | "s" | "m" | "h" | "d" | "w";

/**
 * Parses a duration into milliseconds. A bare number is refused (it used to be read as days
 * here and as seconds there); the refusal names it with `unit`, the unit it most likely meant.
 *
 * @param text e.g. `"14d"`, `"36h"`, `"1h30m"`, `"500ms"`.
 * @param options.unit the unit named in the refusal of a bare number (default `s`).
 * @throws {Error} naming the text when it is not a duration with its unit.
 */
export function parseDuration(text: string, options: { unit?: DurationUnit } = {}): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) {
    throw new Error(
      `Cannot read duration "${text}": a duration carries its unit, e.g. "${t}${
        options.unit ?? "s"
      }" (ms, s, m, h, d, w)`,
    );
  }
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;
  let total = 0;
  let matched = 0;
  for (const m of t.matchAll(re)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    matched += m[0].length;
  }
  if (t.length === 0 || matched !== t.length) {
    throw new Error(
      `Cannot read duration "${text}": expected a number with a unit (ms, s, m, h, d, w), e.g. 14d or 36h`,
    );
  }
  return total;
}

/** The units {@linkcode formatDuration} writes, largest first, and their seconds. */
const FORMAT_UNITS = ["d", "h", "m", "s"] as const;
const FORMAT_SECONDS = [86400, 3600, 60, 1] as const;

/**
 * Renders milliseconds for people, e.g. `13d 4h`, `5m 2s`, `0s`: the two largest units present,
 * rounded to the second. Built without an array or iterator a call (`status` writes thousands of
 * them, in code that runs once: 5 us a call when it built them, measured 2026-12-02).
 */
export function formatDuration(ms: number): string {
  const neg = ms < 0;
  let rest = Math.abs(Math.round(ms / 1000));
  let s = "";
  let parts = 0;
  for (let i = 0; i < 4 && parts < 2; i++) {
    const size = FORMAT_SECONDS[i]!;
    if (rest >= size) {
      s += (parts === 0 ? "" : " ") + Math.floor(rest / size) + FORMAT_UNITS[i]!;
      rest %= size;
      parts++;
    }
  }
  if (s === "") s = "0s";
  return neg ? `-${s}` : s;
}

/**
 * An option's argument parser for a duration: `parseDuration` with `unit` for the form a bare
 * number is refused with, and a lower bound. Every problem is thrown as `refuse(message)` (each
 * program's own refusal), the message starting with the flag, e.g. `--keep: at least 1h, not "5m"`.
 *
 * @returns a function from the argument's text to milliseconds.
 */
export function durationArgument(
  flag: string,
  options: { unit: DurationUnit; minMs?: number; min?: string; refuse: (message: string) => Error },
): (text: string) => number {
  return (text) => {
    let ms: number;
    try {
      ms = parseDuration(text, { unit: options.unit });
    } catch (error) {
      throw options.refuse(`${flag}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (options.minMs !== undefined && ms < options.minMs) {
      throw options.refuse(
        `${flag}: at least ${options.min ?? `${options.minMs}ms`}, not "${text}"`,
      );
    }
    return ms;
  };
}
