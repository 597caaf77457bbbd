/**
 * Durations written by people: `90s`, `15m`, `36h`, `14d`, `2w`, or a bare number of days.
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

/**
 * Parses a duration into milliseconds. A bare number is read in `bareUnit` (default days).
 *
 * @param text e.g. `"14d"`, `"36h"`, `"1h30m"`, `"7"`.
 * @throws {Error} naming the text when it is not a duration.
 */
export function parseDuration(text: string, options: { bareUnit?: "d" | "s" } = {}): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t) * UNITS[options.bareUnit ?? "d"]!;
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

/** Renders milliseconds for people, e.g. `13d 4h`, `5m 2s`, `0s`. */
export function formatDuration(ms: number): string {
  const neg = ms < 0;
  let rest = Math.abs(Math.round(ms / 1000));
  const parts: string[] = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  const s = parts.slice(0, 2).join(" ") || "0s";
  return neg ? `-${s}` : s;
}
