/**
 * Text from the machine (process names, paths, tool output) shown to people: control
 * characters and bidirectional overrides are escaped, so a process named with an escape
 * sequence or a newline cannot forge lines or colours in a report.
 *
 * @module
 */

// C0 and C1 controls (tab kept), DEL, and the bidi embedding/override/isolate controls.
// deno-lint-ignore no-control-regex
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every unsafe character written as `\xNN` or `\u{NNNN}`. */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.codePointAt(0)!;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
  });
}
