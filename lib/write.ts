/**
 * Writing to a standard stream, in a module that imports only lib/printable.ts (which imports
 * nothing; a program's help uses it). Every program's stdout and stderr go through
 * {@linkcode writeAll}: it is where shown text is made printable, once for every output.
 *
 * @module
 */

import { printableText } from "./printable.ts";

/**
 * Writes all of `text` to a standard stream, every character that could disguise text or act on
 * a terminal (controls other than line feed and tab, bidirectional and other format characters)
 * written as `<U+XXXX>` ({@linkcode printableText}): whatever a field carried, the output cannot
 * display as something else. JSON output is already free of them (`jsonText` in
 * lib/printable.ts), so it passes unchanged. A reader that went away (`| head`) is not this
 * program's failure: the work is done and its exit code must say how it went, so a broken
 * pipe is ignored.
 */
export function writeAll(stream: typeof Deno.stdout | typeof Deno.stderr, text: string): void {
  const bytes = new TextEncoder().encode(printableText(text));
  try {
    let written = 0;
    while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
  } catch (error) {
    if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
  }
}
