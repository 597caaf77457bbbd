/**
 * Writing to a standard stream, in a module that imports nothing (a program's help uses it).
 *
 * @module
 */

/**
 * Writes all of `text` to a standard stream. A reader that went away (`| head`) is not this
 * program's failure: the work is done and its exit code must say how it went, so a broken
 * pipe is ignored.
 */
export function writeAll(stream: typeof Deno.stdout | typeof Deno.stderr, text: string): void {
  const bytes = new TextEncoder().encode(text);
  try {
    let written = 0;
    while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
  } catch (error) {
    if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
  }
}
