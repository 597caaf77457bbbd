/**
 * What every benchmark does with what it makes: register its undo before making it, undo all of
 * it last-made-first at the end (also on failure and on an interrupt), and say so on stderr.
 *
 * @module
 */

/** One thing to undo. */
export interface Undo {
  /** What is undone, in words ("pool closed", "/tmp/x removed"). */
  what: string;
  run: () => Promise<void>;
}

/** Undos in the order they were registered; {@linkcode cleanup} runs them in reverse. */
export const undos: Undo[] = [];

let cleaning: Promise<void> | undefined;

/** Undoes everything, last made first; runs once even when called again. Never throws. */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const undo of undos.reverse()) {
      try {
        await undo.run();
        log(`cleanup: ${undo.what}`);
      } catch (error) {
        log(`cleanup: FAILED ${undo.what}: ${error instanceof Error ? error.message : error}`);
      }
    }
  })();
  return cleaning;
}

/** A progress line on stderr. */
export function log(line: string): void {
  console.error(`bench: ${line}`);
}
