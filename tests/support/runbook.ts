/**
 * The runbook reader: the command blocks of a documentation page (docs/operations.md) that a lab
 * test runs as written, so the page cannot drift from the product.
 *
 * A block is run when the last non-blank line before its opening fence is a mark naming where it
 * runs (`deno fmt` puts a blank line between the two):
 *
 * ````md
 * <!-- lab: first -->
 * ```sh
 * install -D -m 0755 mesh-host-debian-x86_64 /usr/lib/mesh/mesh-host-0.1.0
 * ```
 * ````
 *
 * Marks: `first` (the first node), `control` (the control plane's machine), `node` (every node),
 * `node systemd` and `node openrc` (every node of that init). A fence with no mark is illustrative
 * and is not run. The values a reader of the page supplies are the page's placeholders: the rows of
 * the table under a heading containing "Values you supply" whose first cell is a backquoted
 * upper-case name (`` | `CONTROL_ADDRESS` | ... ``); {@linkcode fillIn} replaces them, as whole
 * words, and nothing else.
 *
 * @module
 */

/** Where a marked block runs. */
export type RunbookTarget = "first" | "control" | "node" | "node systemd" | "node openrc";

const TARGETS: readonly RunbookTarget[] = [
  "first",
  "control",
  "node",
  "node systemd",
  "node openrc",
];

/** One marked block of a page. */
export interface RunbookBlock {
  /** Where it runs (its mark). */
  target: RunbookTarget;
  /** The 1-based line of its opening fence in the page. */
  line: number;
  /** The commands, as written between the fences (ending with a newline). */
  text: string;
}

/** A page read by {@linkcode readRunbook}. */
export interface Runbook {
  /** The marked blocks, in page order. */
  blocks: RunbookBlock[];
  /** The placeholders the page lists under "Values you supply", in page order. */
  values: string[];
}

const MARK = /^<!--\s*lab:\s*(.*?)\s*-->\s*$/;
const FENCE = /^(`{3,}|~{3,})(.*)$/;
const VALUE_ROW = /^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/;

/**
 * Reads the marked blocks and the supplied values of a Markdown page.
 *
 * @param markdown the page's text
 * @param where the page's name, for errors (e.g. `docs/operations.md`)
 * @throws {Error} "Cannot read the runbook WHERE: line N: ..." for a mark naming no known target,
 *   a mark followed by anything but blank lines and an opening fence, or a fence never closed, each
 *   naming the line.
 */
export function readRunbook(markdown: string, where = "the page"): Runbook {
  const lines = markdown.split("\n");
  const blocks: RunbookBlock[] = [];
  const values: string[] = [];
  const fail = (line: number, why: string): never => {
    throw new Error(`Cannot read the runbook ${where}: line ${line}: ${why}`);
  };
  let inValues = false;
  let pending: { target: RunbookTarget; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      const close = fence[1]!;
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i]!.startsWith(close); i++) body.push(lines[i]!);
      if (i >= lines.length) fail(start + 1, "this fence is never closed");
      if (pending) {
        blocks.push({
          target: pending.target,
          line: start + 1,
          text: body.join("\n") + "\n",
        });
        pending = undefined;
      }
      continue;
    }
    if (pending && line.trim() !== "") {
      fail(pending.line, "a lab mark must be followed by a fenced block (blank lines between)");
    }
    const mark = MARK.exec(line);
    if (mark) {
      const target = mark[1]!.replace(/\s+/g, " ") as RunbookTarget;
      if (!TARGETS.includes(target)) {
        fail(
          i + 1,
          `unknown lab mark "${mark[1]}" (known: ${TARGETS.map((t) => `"${t}"`).join(", ")})`,
        );
      }
      pending = { target, line: i + 1 };
      continue;
    }
    if (/^#{1,6}\s/.test(line)) inValues = /values you supply/i.test(line);
    const row = inValues ? VALUE_ROW.exec(line) : null;
    if (row && !values.includes(row[1]!)) values.push(row[1]!);
  }
  if (pending) {
    fail(pending.line, "a lab mark must be followed by a fenced block (blank lines between)");
  }
  return { blocks, values };
}

/**
 * Replaces each of `names` in `text` by its value in `supplied`, as a whole word (so `NODE_NAME`
 * in `MESH_NODE_NAME` is left alone). Nothing else is changed.
 *
 * @throws {Error} "Block at line N uses NAME, which no value was supplied for" when the block holds
 *   a listed name that `supplied` lacks.
 */
export function fillIn(
  block: RunbookBlock,
  names: readonly string[],
  supplied: Readonly<Record<string, string>>,
): string {
  let text = block.text;
  for (const name of names) {
    const word = new RegExp(`(?<![A-Za-z0-9_])${name}(?![A-Za-z0-9_])`, "g");
    if (!word.test(text)) continue;
    const value = supplied[name];
    if (value === undefined) {
      throw new Error(`Block at line ${block.line} uses ${name}, which no value was supplied for`);
    }
    text = text.replace(word, () => value);
  }
  return text;
}

/** Whether a block uses any of `names` (as whole words). */
export function uses(block: RunbookBlock, names: readonly string[]): boolean {
  return names.some((name) =>
    new RegExp(`(?<![A-Za-z0-9_])${name}(?![A-Za-z0-9_])`).test(block.text)
  );
}
