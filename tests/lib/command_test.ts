/**
 * lib/command.ts: a failed command's error says its argv, how it ended and the tail of its
 * stderr, a NUL byte in it written as the text `\0` (a message is never cut short by one).
 */

import { assert, assertEquals, assertRejects } from "../support/assert.ts";
import { CommandError, run } from "../../lib/command.ts";

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
