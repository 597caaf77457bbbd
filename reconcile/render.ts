/**
 * Born covered: what the registry's declarations produce. Pure functions of a
 * {@linkcode Registry}; nothing here reads the machine or prints.
 *
 * - The edge: every declared web address gets one route, decided by what its entry declares
 *   (first match wins):
 *   1. `redirect` (a `site`): `redir <target>` (Caddy's default status, 302, temporary: a wrong
 *      target is not cached by browsers for good);
 *   2. a `port`: `reverse_proxy 127.0.0.1:<first port>` (the first port is the one proxied to);
 *   3. a `site` with `state`: `file_server` with its first state directory as `root`;
 *   otherwise the entry says nothing about what serves it, and the address cannot be rendered
 *   (a {@linkcode RenderProblem}; `render caddy` refuses, naming every such entry). A
 *   catch-all address (`*`) is rendered as `http://` (any host, on the HTTP port).
 *   The output is a Caddyfile: what an operator reads and edits, what Caddy's documentation is
 *   written in, and `caddy adapt` turns it into the JSON that `GET /config/` returns, which is
 *   what `run` compares. It has site blocks only: global options (admin, email, ports) stay in
 *   the operator's main Caddyfile, which `import`s this one.
 * - Backup: every declared `state` directory and `database`, with the entries declaring them,
 *   and the entries declaring neither (nothing of theirs is backed up).
 *
 * @module
 */

import { printable } from "../lib/printable.ts";
import type { Entry, Registry } from "./registry.ts";

/** The route the registry renders for one address. */
export type RenderedRoute =
  | { kind: "redirect"; to: string }
  | { kind: "reverse_proxy"; port: number; upstream: string }
  | { kind: "file_server"; root: string };

/** One declared address and its route. */
export interface RenderedSite {
  address: string;
  /** The entry declaring it. */
  service: string;
  route: RenderedRoute;
}

/** An entry whose addresses cannot be rendered, and why. */
export interface RenderProblem {
  /** Path in the registry, e.g. `services.web`. */
  path: string;
  service: string;
  message: string;
}

/** Characters a rendered token must not hold: Caddy reads `{...}` as a placeholder. */
// deno-lint-ignore no-control-regex
const UNSAFE_TOKEN = /[{}\u0000-\u001f\u007f]/;

/**
 * The route the registry renders for an entry's addresses, or why it cannot be rendered.
 */
export function routeOf(entry: Entry): RenderedRoute | { problem: string } {
  if (entry.kind === "site" && entry.redirect !== undefined) {
    const to = new URL(entry.redirect).href;
    if (UNSAFE_TOKEN.test(to) || /[\s"`]/.test(to)) {
      return { problem: `redirect ${JSON.stringify(to)} holds characters Caddy would not keep` };
    }
    return { kind: "redirect", to };
  }
  const port = entry.port?.[0];
  if (port !== undefined) return { kind: "reverse_proxy", port, upstream: `127.0.0.1:${port}` };
  const root = entry.kind === "site" ? entry.state?.[0] : undefined;
  if (root !== undefined) {
    if (UNSAFE_TOKEN.test(root) || root.includes("`")) {
      return { problem: `state directory ${JSON.stringify(root)} cannot be a Caddyfile root` };
    }
    return { kind: "file_server", root };
  }
  return {
    problem:
      `declares web addresses but nothing that says what serves them: a port (reverse_proxy)${
        entry.kind === "site" ? ", a redirect, or a state directory (file_server root)" : ""
      }`,
  };
}

/** Every declared address with its route, in registry order, and every entry that cannot be. */
export function renderSites(registry: Registry): {
  sites: RenderedSite[];
  problems: RenderProblem[];
} {
  const sites: RenderedSite[] = [];
  const problems: RenderProblem[] = [];
  for (const [service, entry] of Object.entries(registry.services)) {
    if (!entry.web?.length) continue;
    const route = routeOf(entry);
    if ("problem" in route) {
      problems.push({ path: `services.${service}`, service, message: route.problem });
      continue;
    }
    for (const address of entry.web) sites.push({ address, service, route });
  }
  return { sites, problems };
}

/** A registry whose addresses cannot all be rendered; carries every problem. */
export class RenderError extends Error {
  readonly problems: RenderProblem[];
  constructor(file: string, problems: RenderProblem[]) {
    super(
      `Cannot render "${file}" (${problems.length} entr${problems.length === 1 ? "y" : "ies"}):\n` +
        problems.map((p) => `  ${p.path}: ${p.message}`).join("\n"),
    );
    this.name = "RenderError";
    this.problems = problems;
  }
}

/** A Caddyfile token: plain when it can be, else in backquotes (taken literally by Caddy). */
function token(text: string): string {
  return /^[^\s"'`#\\]+$/.test(text) ? text : `\`${text}\``;
}

/**
 * The Caddyfile for every declared web address (site blocks only; see the module notes).
 *
 * @param file the registry's path, named in the header comment.
 * @throws {RenderError} listing every entry whose addresses cannot be rendered.
 */
export function renderCaddyfile(registry: Registry, file: string): string {
  const { sites, problems } = renderSites(registry);
  if (problems.length > 0) throw new RenderError(file, problems);
  const lines = [
    `# Rendered by mesh-reconcile render caddy from ${printable(file)}: ${sites.length} address${
      sites.length === 1 ? "" : "es"
    }.`,
    "# Edit the registry and render again rather than editing this file: mesh-reconcile run",
    "# reports every served route that differs from what the registry renders.",
    "# Global options (admin, email, ports) belong in the Caddyfile that imports this one.",
  ];
  const bySite = new Map<string, RenderedSite[]>();
  for (const s of sites) {
    const key = `${s.service}\0${s.address === "*" ? "*" : ""}`;
    bySite.set(key, [...(bySite.get(key) ?? []), s]);
  }
  for (const group of bySite.values()) {
    const { service, route } = group[0]!;
    const entry = registry.services[service]!;
    lines.push("", `# ${service} (${entry.kind})`);
    for (const line of (entry.note ?? "").split("\n").filter((l) => l.trim())) {
      lines.push(`# ${printable(line)}`);
    }
    const addresses = group.map((s) => (s.address === "*" ? "http://" : s.address));
    lines.push(`${addresses.join(", ")} {`);
    switch (route.kind) {
      case "redirect":
        lines.push(`\tredir ${route.to}`);
        break;
      case "reverse_proxy":
        lines.push(`\treverse_proxy ${route.upstream}`);
        break;
      case "file_server":
        lines.push(`\troot * ${token(route.root)}`, "\tfile_server");
        break;
    }
    lines.push("}");
  }
  return lines.join("\n") + "\n";
}

/** What the nightly backup picks up, from the registry's declarations. */
export interface BackupPlan {
  /** The registry file it was rendered from. */
  registry: string;
  /** State directories, sorted, each with the entries declaring it. */
  state: { path: string; services: string[] }[];
  /** Databases, sorted, each with the entries declaring it. */
  databases: { name: string; services: string[] }[];
  /** Entries declaring neither a state directory nor a database: nothing of theirs is kept. */
  without: string[];
}

/** The backup plan of `registry` (read from `file`). */
export function renderBackup(registry: Registry, file: string): BackupPlan {
  const state = new Map<string, string[]>();
  const databases = new Map<string, string[]>();
  const without: string[] = [];
  for (const [service, entry] of Object.entries(registry.services)) {
    for (const path of entry.state ?? []) state.set(path, [...(state.get(path) ?? []), service]);
    for (const name of entry.database ?? []) {
      databases.set(name, [...(databases.get(name) ?? []), service]);
    }
    if (!entry.state?.length && !entry.database?.length) without.push(service);
  }
  const sorted = <T>(m: Map<string, T>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    registry: file,
    state: sorted(state).map(([path, services]) => ({ path, services })),
    databases: sorted(databases).map(([name, services]) => ({ name, services })),
    without,
  };
}

/**
 * The backup plan's state directories, one a line, as `restic backup --files-from FILE` reads
 * them (restic(1): one path a line; blank lines and lines starting with `#` are skipped). A
 * path holding a line break cannot be said in that format and is refused.
 *
 * @throws {Error} naming the path when it holds a line break.
 */
export function backupFiles(plan: BackupPlan): string {
  for (const s of plan.state) {
    if (/[\r\n]/.test(s.path)) {
      throw new Error(
        `Cannot render backup for --files-from: state directory ${
          printable(s.path)
        } holds a line break`,
      );
    }
  }
  return plan.state.map((s) => s.path + "\n").join("");
}

/** The backup plan as text for people (the JSON form is the plan itself). */
export function backupText(plan: BackupPlan): string {
  const lines = [
    `backup of ${printable(plan.registry)}: ${plan.state.length} state director${
      plan.state.length === 1 ? "y" : "ies"
    }, ${plan.databases.length} database${plan.databases.length === 1 ? "" : "s"}`,
  ];
  const table = (title: string, rows: [string, string[]][]) => {
    if (rows.length === 0) return;
    lines.push("", `${title}:`);
    const width = Math.max(...rows.map(([k]) => printable(k).length));
    for (const [k, services] of rows) {
      lines.push(`  ${printable(k).padEnd(width)}  ${services.join(", ")}`);
    }
  };
  table("state directories", plan.state.map((s) => [s.path, s.services]));
  table("databases", plan.databases.map((d) => [d.name, d.services]));
  if (plan.without.length > 0) {
    lines.push(
      "",
      `declaring neither, so nothing of theirs is backed up: ${plan.without.join(", ")}`,
    );
  }
  return lines.join("\n") + "\n";
}
