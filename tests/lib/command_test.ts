/**
 * lib/command.ts: a failed command's error says its argv, how it ended and the tail of its
 * stderr, a NUL byte in it written as the text `\0` (a message is never cut short by one).
 */

import { assert, assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import { CommandError, run, STDERR_TAIL_BYTES } from "../../lib/command.ts";

Deno.test("command: a NUL byte in a failed command's stderr is written \\0 in its error", async () => {
  const error = await assertRejects(
    () => run(["sh", "-c", "printf 'before\\000after \\377 end\\n' >&2; exit 3"]),
    CommandError,
  );
  assertEquals(error.code, 3);
  assertEquals(error.stderrTail, "before\\0after \uFFFD end");
  assert(!error.message.includes("\0"), error.message);
  assert(error.message.endsWith("exited with code 3: before\\0after \uFFFD end"), error.message);
});

Deno.test("a long stderr is cut at the start of a line, never inside a word, and says so", async () => {
  // podman retrying a pull: lines of its own, the last one the error (the field case: a byte cut
  // began the message with "rror:").
  const filler = "Failed, retrying in 1s ... (1/3). ".repeat(70);
  const error = await assertRejects(
    () =>
      run([
        "sh",
        "-c",
        `printf '%s\\n' "${filler}" >&2; printf 'Error: initializing source: manifest unknown\\n' >&2; exit 125`,
      ]),
    CommandError,
  );
  assert(
    error.message.endsWith(
      ": [... 2381 earlier bytes not shown] Error: initializing source: manifest unknown",
    ),
    error.message,
  );
  // One line longer than the budget: cut after a space, never inside a word.
  const word = "abcdefghi ".repeat(400);
  const one = await assertRejects(
    () => run(["sh", "-c", `printf '%s' "${word}" >&2; exit 1`]),
    CommandError,
  );
  assert(/\[\.\.\. \d+ earlier bytes not shown\] abcdefghi /.test(one.stderrTail), one.stderrTail);
  assert(new TextEncoder().encode(one.stderrTail).length <= STDERR_TAIL_BYTES);
});

Deno.test("command: an aborted signal stops the command with SIGTERM, and the error says so", async () => {
  const stop = new AbortController();
  const started = performance.now();
  const running = run(["sleep", "30"], { signal: stop.signal });
  setTimeout(() => stop.abort(), 100);
  const error = await running.then(() => undefined, (e: unknown) => e);
  assert(error instanceof CommandError, String(error));
  assertStringIncludes(error.message, "SIGTERM");
  assert(performance.now() - started < 10_000, "stopped at the abort, not at its end");
});
