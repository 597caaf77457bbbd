import { assertEquals, assertStringIncludes, assertThrows } from "../support/assert.ts";
import { formatDuration, parseDuration } from "../../lib/duration.ts";

Deno.test("formatDuration: the two largest units, rounded to the second, signed", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [499, "0s"],
    [500, "1s"],
    [59_999, "1m"],
    [61_000, "1m 1s"],
    [3_600_000, "1h"],
    [3_660_000, "1h 1m"],
    [3_661_000, "1h 1m"], // the seconds are past the two largest units
    [86_400_000 + 300_000, "1d 5m"], // a unit that is zero is skipped, not shown as 0h
    [13 * 86_400_000 + 4 * 3_600_000 + 59_000, "13d 4h"],
    [-90_000, "-1m 30s"],
  ];
  for (const [ms, text] of cases) assertEquals(formatDuration(ms), text, `${ms} ms`);
});

Deno.test("formatDuration and parseDuration agree on what they both write", () => {
  for (const text of ["5s", "2m", "1h", "3d", "1h 30m", "13d 4h"]) {
    assertEquals(formatDuration(parseDuration(text.replace(" ", ""))), text);
  }
});

Deno.test("parseDuration: a bare number is refused, naming the unit it most likely meant", () => {
  assertEquals(parseDuration("1h30m"), 5_400_000);
  assertEquals(parseDuration("500ms"), 500);
  assertStringIncludes(
    assertThrows(() => parseDuration("14", { unit: "d" }), Error).message,
    'e.g. "14d"',
  );
  assertStringIncludes(
    assertThrows(() => parseDuration("5 minutes"), Error).message,
    'Cannot read duration "5 minutes"',
  );
  assertStringIncludes(
    assertThrows(() => parseDuration(""), Error).message,
    "Cannot read duration",
  );
});
