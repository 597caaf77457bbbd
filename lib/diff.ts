/**
 * A unified diff of two texts, by lines (the format of `diff -u`, hunks with three lines of
 * context), for dry runs. Pure; the longest common subsequence is computed with Myers' O(ND)
 * algorithm, so two large files that differ little are cheap.
 *
 * @module
 */

/** Options for {@linkcode unifiedDiff}. */
export interface DiffOptions {
  /** The old side's label (`--- a`). */
  from: string;
  /** The new side's label (`+++ b`). */
  to: string;
  /** Lines of context around each change (default 3). */
  context?: number;
  /** The most characters of diff returned; longer is cut and says so (default 8,192). */
  maxChars?: number;
  /** The most edits computed before giving up (default 20,000). */
  maxEdits?: number;
}

type Op = { kind: " " | "-" | "+"; line: string };

/** Splits text into lines, keeping whether the last one ended with a newline. */
function linesOf(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  else lines[lines.length - 1] += "\n\\ No newline at end of file";
  return lines;
}

/** The edit script from `a` to `b` (Myers), or undefined past `maxEdits`. */
function editScript(a: string[], b: string[], maxEdits: number): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!)
        ? v[offset + k + 1]!
        : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
    v = next;
  }
  if (!found) return undefined;
  trace.push(v);
  // Walk back through the trace.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 2; d >= 0; d--) {
    const vd = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[offset + k - 1]! < vd[offset + k + 1]!)
      ? k + 1
      : k - 1;
    const prevX = d === 0 ? 0 : vd[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) ops.push({ kind: " ", line: a[--x]! }) && y--;
    if (d === 0) break;
    if (x === prevX) ops.push({ kind: "+", line: b[--y]! });
    else ops.push({ kind: "-", line: a[--x]! });
  }
  while (x > 0 && y > 0) ops.push({ kind: " ", line: a[--x]! }) && y--;
  return ops.reverse();
}

/**
 * The unified diff from `before` to `after`, or "" when they are equal. Cut at `maxChars`
 * (saying so); when the texts differ too much to compute within `maxEdits`, says that instead.
 */
export function unifiedDiff(before: string, after: string, options: DiffOptions): string {
  if (before === after) return "";
  const context = options.context ?? 3;
  const maxChars = options.maxChars ?? 8192;
  const a = linesOf(before);
  const b = linesOf(after);
  const ops = editScript(a, b, options.maxEdits ?? 20_000);
  if (ops === undefined) return `(the contents differ in too many lines to show a diff)`;
  const out: string[] = [`--- ${options.from}`, `+++ ${options.to}`];
  // Hunks: runs of changes with their context, merged when their contexts touch.
  let i = 0;
  let aLine = 0;
  let bLine = 0;
  const positions = ops.map((op) => {
    const here = { a: aLine, b: bLine };
    if (op.kind !== "+") aLine++;
    if (op.kind !== "-") bLine++;
    return here;
  });
  while (i < ops.length) {
    while (i < ops.length && ops[i]!.kind === " ") i++;
    if (i >= ops.length) break;
    const start = Math.max(0, i - context);
    let end = i;
    for (;;) {
      while (end < ops.length && ops[end]!.kind !== " ") end++;
      let gap = end;
      while (gap < ops.length && ops[gap]!.kind === " ") gap++;
      if (gap < ops.length && gap - end <= 2 * context) end = gap;
      else {
        end = Math.min(ops.length, end + context);
        break;
      }
    }
    const hunk = ops.slice(start, end);
    const aCount = hunk.filter((o) => o.kind !== "+").length;
    const bCount = hunk.filter((o) => o.kind !== "-").length;
    const aStart = aCount === 0 ? positions[start]!.a : positions[start]!.a + 1;
    const bStart = bCount === 0 ? positions[start]!.b : positions[start]!.b + 1;
    out.push(`@@ -${aStart},${aCount} +${bStart},${bCount} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    i = end;
  }
  const text = out.join("\n");
  return text.length > maxChars
    ? `${text.slice(0, maxChars)}\n(diff cut at ${maxChars} characters of ${text.length})`
    : text;
}
