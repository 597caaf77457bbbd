/**
 * The deploy map: the file at the top of the deployment repository that says which of its files
 * are copied where on the machine, owned by whom and with which mode. `mesh-reconcile run --repo`
 * checks every destination against it (content against the source in the checkout; owner, group
 * and mode, executable bit included, against the map).
 *
 * Format: YAML, {@linkcode DEPLOY_MAP_FILE} at the top of the repository, version 1, strict (an
 * unknown field is an error, never ignored):
 *
 * ```yaml
 * version: 1
 * files:
 *   - source: bin/backup.sh            # relative to the top of the repository, inside it
 *     destination: /usr/local/bin/backup.sh
 *     owner: root
 *     group: root
 *     mode: "0755"                     # octal, quoted (YAML reads 0755 as the number 755)
 * ```
 *
 * Every field is required: a copy whose owner or mode is not said is refused, never defaulted.
 * A source that is absolute or contains `..` is outside the repository and refuses the whole map;
 * every problem is reported at once, each with its line, column and path.
 *
 * @module
 */

import { z } from "zod";
import { type Document, isMap, isScalar, isSeq, LineCounter, type Node } from "yaml";
import { parseDocumentBounded, YamlBoundError } from "../lib/yaml_bounds.ts";
import { formatPath, issueMessage } from "../lib/json_path.ts";
import { DEPLOY_MAP_FILE } from "./repo_check.ts";

export { DEPLOY_MAP_FILE };

/** Account and group names as `useradd`/`groupadd` accept them. */
const NAME = /^[a-z_][a-z0-9_-]*\$?$/;

/** A source: a plain relative path inside the repository (not in `.git`). */
const SourcePath = z.string().superRefine((p, ctx) => {
  const problem = (message: string) => ctx.addIssue({ code: "custom", message });
  if (p.includes("\0")) return problem("Must not contain a NUL character");
  if (p.startsWith("/")) {
    return problem(
      `"${p}" is an absolute path, outside the repository: a source is relative to its top`,
    );
  }
  const parts = p.split("/");
  if (parts.includes("..")) {
    return problem(`"${p}" leaves the repository through "..": a source must be inside it`);
  }
  if (parts.some((s) => s === "" || s === ".")) {
    return problem(`"${p}" must be a plain relative path (no empty or "." parts)`);
  }
  if (parts[0] === ".git") return problem(`"${p}" is inside .git, which is not deployed content`);
});

/** A destination: an absolute path of a file (not `/`, no `..`, `.` or empty parts). */
const DestinationPath = z.string().superRefine((p, ctx) => {
  const parts = p.split("/").slice(1);
  if (
    !p.startsWith("/") || p.includes("\0") || parts.length === 0 ||
    parts.some((s) => s === "" || s === "." || s === "..")
  ) {
    ctx.addIssue({
      code: "custom",
      message: `"${p}" must be an absolute file path without "..", "." or empty parts`,
    });
  }
});

/** An octal mode as a string, `"0644"`, `"755"`, `"4755"`; read as a number (`0o644`). */
const Mode = z.unknown().transform((v, ctx) => {
  if (typeof v === "string" && /^[0-7]{3,4}$/.test(v)) return parseInt(v, 8);
  ctx.addIssue({
    code: "custom",
    message: typeof v === "number"
      ? `Must be an octal string such as "0644", quoted (YAML read ${v} as a number)`
      : `Must be an octal string such as "0644"`,
  });
  return z.NEVER;
});

/** One copy: a source in the repository, where it goes, and its owner, group and mode. */
export const DeployEntry = z.strictObject({
  source: SourcePath,
  destination: DestinationPath,
  owner: z.string().regex(NAME, "Must be an account name"),
  group: z.string().regex(NAME, "Must be a group name"),
  mode: Mode,
});

/** The deploy map, version 1. */
export const DeployMap = z.strictObject({
  version: z.literal(1, { error: "Unsupported deploy map version; this program reads version 1" }),
  files: z.array(DeployEntry),
}).superRefine((map, ctx) => {
  const seen = new Map<string, number>();
  map.files.forEach((f, i) => {
    const other = seen.get(f.destination);
    if (other !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["files", i, "destination"],
        message: `"${f.destination}" is already the destination of files[${other}]`,
      });
    } else seen.set(f.destination, i);
  });
});

/** One copy of a valid map, with where it is written. */
export type DeployEntry = z.output<typeof DeployEntry> & {
  /** 1-based line of the entry in the map file. */
  line: number;
};

/** One problem of a deploy map, placed where it is. */
export interface DeployMapProblem {
  /** Path inside the document, e.g. `files[2].source`; empty for the whole document. */
  path: string;
  /** 1-based line; 0 when the problem has no place. */
  line: number;
  /** 1-based column. */
  column: number;
  message: string;
}

/** A deploy map that is not valid; carries every problem at once. */
export class DeployMapError extends Error {
  readonly problems: DeployMapProblem[];
  constructor(file: string, problems: DeployMapProblem[]) {
    super(
      `Invalid deploy map "${file}" (${problems.length} problem${
        problems.length === 1 ? "" : "s"
      }): ${
        problems.map((p) =>
          `${p.line > 0 ? `${file}:${p.line}:${p.column}: ` : ""}${
            p.path ? `${p.path}: ` : ""
          }${p.message}`
        ).join("; ")
      }`,
    );
    this.name = "DeployMapError";
    this.problems = problems;
  }
}

/**
 * Validates deploy map text. `file` is used only in messages.
 *
 * @returns the copies, in the map's order, each with its line.
 * @throws {DeployMapError} with every YAML and schema problem, each at its line and column.
 */
export function parseDeployMap(text: string, file = DEPLOY_MAP_FILE): DeployEntry[] {
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
  try {
    // A line or a nesting past lib/yaml_bounds.ts's bounds is refused before anything recurses.
    doc = parseDocumentBounded(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  } catch (error) {
    if (!(error instanceof YamlBoundError)) throw error;
    throw new DeployMapError(file, [{
      path: "",
      line: error.line,
      column: error.column,
      message: error.message,
    }]);
  }
  if (doc.errors.length > 0) {
    throw new DeployMapError(
      file,
      doc.errors.map((e) => {
        const pos = lineCounter.linePos(e.pos[0]);
        return { path: "", line: pos.line, column: pos.col, message: e.message.split("\n")[0]! };
      }),
    );
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (cause) {
    throw new DeployMapError(file, [{
      path: "",
      line: 1,
      column: 1,
      message: cause instanceof Error ? cause.message : String(cause),
    }]);
  }
  const parsed = DeployMap.safeParse(data);
  if (!parsed.success) {
    const problems: DeployMapProblem[] = [];
    for (const issue of parsed.error.issues) {
      const path = issue.path.map((k) => (typeof k === "symbol" ? String(k) : k));
      const keys = issue.code === "unrecognized_keys" ? issue.keys : [undefined];
      for (const key of keys) {
        const at = key === undefined ? path : [...path, key];
        problems.push({
          path: formatPath(at),
          ...positionOf(doc.contents, at, lineCounter, key !== undefined),
          message: key !== undefined ? `Unknown field "${key}"` : issueMessage(issue, data, at),
        });
      }
    }
    problems.sort((a, b) => a.line - b.line || a.column - b.column);
    throw new DeployMapError(file, problems);
  }
  return parsed.data.files.map((f, i) => ({
    ...f,
    line: positionOf(doc.contents, ["files", i], lineCounter).line,
  }));
}

/**
 * The line and column of `path` in the document: the deepest node on the way that exists; with
 * `atKey`, the last step's key rather than its value.
 */
function positionOf(
  root: Node | null,
  path: (string | number)[],
  lineCounter: LineCounter,
  atKey = false,
): { line: number; column: number } {
  let node: unknown = root;
  let offset = (root as Node | null)?.range?.[0] ?? 0;
  for (const [i, step] of path.entries()) {
    let next: Node | undefined;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(step));
      const last = atKey && i === path.length - 1;
      next = (last ? pair?.key : pair?.value ?? pair?.key) as Node | undefined;
    } else if (isSeq(node) && typeof step === "number") {
      next = node.items[step] as Node | undefined;
    }
    if (next === undefined || next === null) break;
    node = next;
    offset = next.range?.[0] ?? offset;
  }
  const pos = lineCounter.linePos(offset);
  return { line: pos.line, column: pos.col };
}
