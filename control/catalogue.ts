/**
 * The module catalogue: asking for builds and recording their answers, and `module list`, which
 * says what exists, at which version, where it came from, whether it is behind its source, and
 * which nodes run it.
 *
 * A build is work, not state: it travels on the shared build queue, and its answer comes back
 * through the `mesh` exchange to this asker's own reply queue (named here, deterministically),
 * matched by correlation id.
 *
 * @module
 */

import type { ConfirmChannel, ConsumeMessage } from "amqplib";
import { publishConfirmed } from "../lib/amqp.ts";
import {
  BUILD_REQUEST_KEY,
  BuildAnswer,
  buildReplyKey,
  buildReplyQueue,
  BuildRequest,
  decodeMessage,
  EXCHANGE,
  MessageError,
  nodeNameProblem,
  STORE_ADDRESS,
} from "../lib/broker.ts";
import { redactUrl } from "../lib/url.ts";
import { run } from "../lib/command.ts";
import { messageOf } from "../lib/atomic.ts";
import { declarationDigest } from "../lib/declaration.ts";
import type { Queryable, Sql } from "./db.ts";
import { InputError, MODULE_NAME, readNodeStates } from "./inventory.ts";
import { parseModule, type Provision } from "./module_file.ts";
import type { Verdict } from "./state.ts";
import { jsonText } from "../lib/printable.ts";

/** What `module build` asks for. */
export interface BuildAsk {
  module: string;
  source: string;
  commit: string;
  /** The artifact store's address (the binding sent to the builder). */
  store: string | undefined;
  /** The branch "behind" is judged against (default: the source's default branch). */
  branch?: string;
  /** This asker's name: its reply queue is `mesh.build.reply.<asker>`. */
  asker: string;
  /** How long to wait for the answer (ms). */
  timeoutMs: number;
  /** Told of answers that were not this one's (recorded or ignored). */
  onOther?: (line: string) => void;
}

/** What a build came to, as recorded. */
export interface BuildResult {
  answer: BuildAnswer;
  /** For a built answer: what happened to the module. */
  module?: { version: number; digest: string; change: "created" | "updated" | "unchanged" };
}

/** No answer came within the time allowed. */
export class NoAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoAnswerError";
  }
}

/**
 * Refuses, before any connection, what a build ask carries that no builder could take: a bad
 * module name or asker, an artifact store binding with no address or not `host[:port][/path]`, a
 * source URL carrying a credential.
 *
 * @throws {InputError} naming the module and what is wrong.
 */
export function assertBuildAsk(
  ask: Pick<BuildAsk, "module" | "asker" | "store" | "source">,
): void {
  if (!MODULE_NAME.test(ask.module)) {
    throw new InputError(`Cannot build module ${JSON.stringify(ask.module)}: not a module name`);
  }
  const askerProblem = nodeNameProblem(ask.asker);
  if (askerProblem !== undefined) {
    throw new InputError(`Cannot use asker name: ${askerProblem.replace(/^node name/, "asker")}`);
  }
  if (ask.store === undefined || ask.store.trim() === "") {
    throw new InputError(
      `Cannot build module "${ask.module}": the artifact store binding has no address (give --store or set MESH_ARTIFACT_STORE); refused rather than letting a builder fall back to anything`,
    );
  }
  if (!STORE_ADDRESS.test(ask.store.trim())) {
    throw new InputError(
      `Cannot build module "${ask.module}": the artifact store "${ask.store}" is not an OCI registry address host[:port][/path]`,
    );
  }
  if (redactUrl(ask.source) !== ask.source) {
    throw new InputError(
      `Cannot build module "${ask.module}": the source URL carries a credential, which would be stored and shown (${
        redactUrl(ask.source)
      }); give the builder a git credential helper or an SSH key instead`,
    );
  }
}

/**
 * Asks for a build and waits for its answer, recording it (and any other pending build's answer
 * that arrives meanwhile).
 *
 * @throws {InputError} for a bad module name or asker, or an artifact store binding with no
 *   address (refused, never defaulted).
 * @throws {AmqpError} when the request cannot be published (e.g. no build queue: run broker setup).
 * @throws {NoAnswerError} when no answer came in time (the request stays queued; its answer is
 *   recorded by a later `module build`).
 */
export async function askBuild(
  sql: Sql,
  channel: ConfirmChannel,
  ask: BuildAsk,
): Promise<BuildResult> {
  assertBuildAsk(ask);
  const store = (ask.store ?? "").trim();
  const [existing] = await sql<{ origin: string }[]>`
    select origin from modules where name = ${ask.module}`;
  if (existing !== undefined && existing.origin !== "built") {
    throw new InputError(
      `Cannot build module "${ask.module}": a ${existing.origin} module of that name exists (${
        existing.origin === "shipped" ? "it comes with the control plane" : "added by hand"
      }); a build would replace what it declares: build it under another name`,
    );
  }
  const branch = ask.branch ?? await defaultBranch(ask.source);
  const queue = buildReplyQueue(ask.asker);
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, EXCHANGE, buildReplyKey(ask.asker));

  const request: BuildRequest = {
    kind: "build-request",
    id: crypto.randomUUID(),
    module: ask.module,
    source: ask.source,
    commit: ask.commit,
    artifactStore: { address: store },
    replyTo: buildReplyKey(ask.asker),
    requestedAt: new Date().toISOString(),
  };
  // What the builder would refuse (and could not answer) is refused here, at once.
  const valid = BuildRequest.safeParse(request);
  if (!valid.success) {
    throw new InputError(
      `Cannot build module "${ask.module}": ${
        valid.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")
      }`,
    );
  }
  await sql.begin(async (tx) => {
    await tx`
      insert into builds (id, module, source, source_branch, commit_asked, artifact_store)
      values (${request.id}, ${request.module}, ${request.source}, ${branch ?? null},
              ${request.commit}, ${request.artifactStore!.address})`;
    // Committed only once the broker confirmed the request.
    await publishConfirmed(channel, [{
      exchange: EXCHANGE,
      routingKey: BUILD_REQUEST_KEY,
      body: new TextEncoder().encode(JSON.stringify(request)),
      options: { correlationId: request.id, type: "build-request", replyTo: request.replyTo },
    }]);
  });
  return await awaitAnswer(sql, channel, queue, request.id, ask);
}

async function awaitAnswer(
  sql: Sql,
  channel: ConfirmChannel,
  queue: string,
  id: string,
  ask: BuildAsk,
): Promise<BuildResult> {
  await channel.prefetch(16);
  let settle!: (result: BuildResult) => void;
  let fail!: (error: unknown) => void;
  const done = new Promise<BuildResult>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  let chain: Promise<void> = Promise.resolve();
  const handle = async (message: ConsumeMessage) => {
    const correlation = message.properties.correlationId as string | undefined;
    let answer: BuildAnswer;
    try {
      answer = decodeMessage(BuildAnswer, message.content, "a build answer");
    } catch (error) {
      if (!(error instanceof MessageError)) throw error;
      ask.onOther?.(`ignored a message on ${queue} that is not a build answer: ${error.message}`);
      channel.ack(message);
      return;
    }
    if (correlation !== answer.id) {
      ask.onOther?.(
        `ignored an answer whose correlation id (${correlation}) is not its own id (${answer.id})`,
      );
      channel.ack(message);
      return;
    }
    const recorded = await recordAnswer(sql, answer);
    channel.ack(message);
    if (answer.id === id) {
      settle(recorded ?? { answer });
    } else {
      ask.onOther?.(
        recorded
          ? `recorded the answer to an earlier build of ${answer.module} (${answer.id}): ${answer.outcome}`
          : `ignored an answer to a build this inventory is not waiting for (${answer.id})`,
      );
    }
  };
  const { consumerTag } = await channel.consume(queue, (message) => {
    if (message === null) {
      fail(new Error(`The broker cancelled the consumer of ${queue}`));
      return;
    }
    chain = chain.then(() => handle(message)).catch(fail);
  }, { noAck: false });
  const timer = setTimeout(async () => {
    // Another asker of the same name may have taken and recorded it.
    const [row] = await sql`select state from builds where id = ${id}`.catch(() => []);
    if (row && row.state !== "pending") {
      const answer = await answerFromRow(sql, id);
      if (answer) return settle({ answer });
    }
    fail(
      new NoAnswerError(
        `No answer to build ${id} of ${ask.module} within ${
          Math.round(ask.timeoutMs / 1000)
        } s; the request stays queued for a builder, and its answer is recorded by a later module build`,
      ),
    );
  }, ask.timeoutMs);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
    await channel.cancel(consumerTag).catch(() => {});
    await chain;
  }
}

async function answerFromRow(sql: Sql, id: string): Promise<BuildAnswer | undefined> {
  const [row] = await sql<
    {
      module: string;
      commit_asked: string;
      state: "built" | "failed";
      resolved_commit: string | null;
      image: string | null;
      digest: string | null;
      reason: string | null;
      builder: string | null;
      requested_at: Date;
      finished_at: Date | null;
    }[]
  >`select * from builds where id = ${id}`;
  if (!row) return undefined;
  return {
    kind: "build-answer",
    id,
    module: row.module,
    commit: row.commit_asked,
    ...(row.resolved_commit ? { resolved: row.resolved_commit } : {}),
    outcome: row.state,
    ...(row.image ? { image: row.image } : {}),
    ...(row.digest ? { digest: row.digest } : {}),
    ...(row.reason ? { reason: row.reason } : {}),
    builder: row.builder ?? "",
    startedAt: row.requested_at.toISOString(),
    finishedAt: (row.finished_at ?? new Date()).toISOString(),
  };
}

/**
 * Records an answer against its pending build; a built one makes the module a container running
 * the image pinned by digest (a new version when the digest changed).
 *
 * @returns what was recorded, or undefined when no pending build has that id.
 */
export async function recordAnswer(
  sql: Sql,
  answer: BuildAnswer,
): Promise<BuildResult | undefined> {
  return await sql.begin(async (tx) => {
    const [build] = await tx<{ module: string; source: string; source_branch: string | null }[]>`
      select module, source, source_branch from builds
      where id = ${answer.id} and state = 'pending' for update`;
    if (build === undefined) return undefined;
    if (answer.outcome === "failed") {
      await tx`
        update builds set state = 'failed', reason = ${answer.reason ?? "no reason given"},
          resolved_commit = ${answer.resolved ?? null}, builder = ${answer.builder},
          finished_at = ${answer.finishedAt}
        where id = ${answer.id}`;
      return { answer };
    }
    if (!answer.image || !answer.digest || !answer.resolved) {
      await tx`
        update builds set state = 'failed', builder = ${answer.builder},
          reason = 'the builder said built but gave no image, digest or commit',
          finished_at = ${answer.finishedAt}
        where id = ${answer.id}`;
      return { answer: { ...answer, outcome: "failed", reason: "incomplete answer" } };
    }
    await tx`
      update builds set state = 'built', resolved_commit = ${answer.resolved},
        image = ${answer.image}, digest = ${answer.digest}, builder = ${answer.builder},
        finished_at = ${answer.finishedAt}
      where id = ${answer.id}`;
    const [current] = await tx<
      { origin: string; source_commit: string | null; version: number; digest: string }[]
    >`
      select origin, source_commit, version, digest from modules where name = ${build.module}
      for update`;
    if (current?.origin === "built" && current.source_commit === answer.resolved) {
      // The same commit again: image digests are not reproducible, so a new digest here is not
      // a change of content, and would make every node replace its container for nothing.
      return {
        answer,
        module: { version: current.version, digest: current.digest, change: "unchanged" as const },
      };
    }
    const module = await upsertBuiltModule(tx, {
      name: build.module,
      image: answer.image,
      source: build.source,
      branch: build.source_branch ?? undefined,
      commit: answer.resolved,
    });
    return { answer, module };
  });
}

/** The declaration fragment of a built module: one container running its image. */
export function builtModuleBody(name: string, image: string): string {
  return JSON.stringify({
    version: 1,
    resources: [{ id: name, type: "container", name, image }],
  });
}

async function upsertBuiltModule(
  tx: Queryable,
  m: { name: string; image: string; source: string; branch?: string; commit: string },
): Promise<{ version: number; digest: string; change: "created" | "updated" | "unchanged" }> {
  const body = builtModuleBody(m.name, m.image);
  const digest = await declarationDigest(body);
  const [row] = await tx<{ version: number; digest: string }[]>`
    select version, digest from modules where name = ${m.name} for update`;
  const unchanged = row?.digest === digest;
  const version = unchanged ? row!.version : (row?.version ?? 0) + 1;
  await tx`
    insert into modules (name, version, digest, body, origin, source, source_branch,
      source_commit, image)
    values (${m.name}, ${version}, ${digest}, ${body}, 'built', ${m.source}, ${m.branch ?? null},
      ${m.commit}, ${m.image})
    on conflict (name) do update set version = excluded.version, digest = excluded.digest,
      body = excluded.body, origin = 'built', source = excluded.source,
      source_branch = excluded.source_branch, source_commit = excluded.source_commit,
      image = excluded.image, updated_at = now()`;
  // A module removed before and added again is in the catalogue anew.
  await tx`delete from removals where what = 'module' and name = ${m.name}`;
  return {
    version,
    digest,
    change: row === undefined ? "created" : unchanged ? "unchanged" : "updated",
  };
}

/** The source's default branch (`git ls-remote --symref SOURCE HEAD`), or undefined. */
async function defaultBranch(source: string): Promise<string | undefined> {
  const out = await run(["git", "ls-remote", "--symref", "--", source, "HEAD"], {
    allowFailure: true,
    timeoutMs: 30_000,
    env: { GIT_TERMINAL_PROMPT: "0" },
  }).catch(() => undefined);
  const match = out?.code === 0 ? /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(out.stdout) : null;
  return match?.[1];
}

/** Whether a built module is behind its source. */
export type Behind =
  | { state: "behind"; detail: string }
  | { state: "current"; detail: string }
  | { state: "unknown"; detail: string }
  | { state: "no-source"; detail: string };

/** One module in the catalogue. Optional fields are absent, never null. */
export interface CatalogueEntry {
  name: string;
  version: number;
  /** sha256 of the module's declaration fragment. */
  digest: string;
  origin: "built" | "handed-over" | "shipped";
  /** The origin in words: "built from SOURCE at COMMIT", "handed over", "shipped". */
  from: string;
  source?: string;
  branch?: string;
  commit?: string;
  image?: string;
  behind: Behind;
  /** The nodes it is assigned to, with what each is doing. */
  nodes: { name: string; verdict: Verdict }[];
  /** The provisions it offers (control/module_file.ts), each with its address when it gives one. */
  provides: Provision[];
  /** The provisions it requires: bound on push to the module providing each. */
  requires: string[];
  updatedAt: string;
}

/**
 * Reads the catalogue: every module, whether each built one is behind its source (one
 * `git ls-remote` per source and branch), and the nodes that run it.
 */
export async function readCatalogue(sql: Sql): Promise<CatalogueEntry[]> {
  const rows = await sql<
    {
      name: string;
      version: number;
      digest: string;
      origin: CatalogueEntry["origin"];
      source: string | null;
      source_branch: string | null;
      source_commit: string | null;
      image: string | null;
      body: string;
      updated_at: Date;
    }[]
  >`select name, version, digest, origin, source, source_branch, source_commit, image, body,
      updated_at
    from modules order by name`;
  const states = await readNodeStates(sql);
  const runs = new Map<string, { name: string; verdict: Verdict }[]>();
  for (const node of states) {
    for (const module of node.modules) {
      const list = runs.get(module) ?? [];
      list.push({ name: node.name, verdict: node.said });
      runs.set(module, list);
    }
  }
  const heads = new Map<string, Promise<{ head?: string; error?: string }>>();
  const headOf = (source: string, branch: string | null) => {
    const key = `${source}\0${branch ?? ""}`;
    let p = heads.get(key);
    if (p === undefined) {
      p = remoteHead(source, branch);
      heads.set(key, p);
    }
    return p;
  };
  return await Promise.all(rows.map(async (row): Promise<CatalogueEntry> => {
    let behind: Behind;
    if (row.origin !== "built" || row.source === null || row.source_commit === null) {
      behind = {
        state: "no-source",
        detail: row.origin === "shipped"
          ? "shipped with the control plane"
          : "handed over by hand: no source to be behind",
      };
    } else {
      const { head, error } = await headOf(row.source, row.source_branch);
      const ref = row.source_branch ?? "HEAD";
      if (head === undefined) {
        behind = { state: "unknown", detail: `cannot ask the source: ${error}` };
      } else if (head === row.source_commit) {
        behind = { state: "current", detail: `${ref} is at the built commit` };
      } else {
        behind = {
          state: "behind",
          detail: `${ref} is at ${head.slice(0, 12)}, built from ${row.source_commit.slice(0, 12)}`,
        };
      }
    }
    let provisions: { provides: Provision[]; requires: string[] };
    try {
      const { provides, requires } = parseModule(row.body);
      provisions = { provides, requires };
    } catch {
      // Every body was read when it was added; one that no longer reads offers nothing here
      // (rendering a node that runs it says why).
      provisions = { provides: [], requires: [] };
    }
    return {
      name: row.name,
      version: row.version,
      digest: row.digest,
      origin: row.origin,
      from: row.origin === "built"
        ? `built from ${row.source} at ${row.source_commit?.slice(0, 12)}`
        : row.origin === "shipped"
        ? "shipped with the control plane"
        : "handed over",
      ...(row.source !== null ? { source: row.source } : {}),
      ...(row.source_branch !== null ? { branch: row.source_branch } : {}),
      ...(row.source_commit !== null ? { commit: row.source_commit } : {}),
      ...(row.image !== null ? { image: row.image } : {}),
      behind,
      nodes: runs.get(row.name) ?? [],
      ...provisions,
      updatedAt: row.updated_at.toISOString(),
    };
  }));
}

async function remoteHead(
  source: string,
  branch: string | null,
): Promise<{ head?: string; error?: string }> {
  const ref = branch === null ? "HEAD" : `refs/heads/${branch}`;
  try {
    const out = await run(["git", "ls-remote", "--", source, ref], {
      timeoutMs: 30_000,
      env: { GIT_TERMINAL_PROMPT: "0" },
    });
    const line = out.stdout.split("\n").find((l) => l.endsWith(`\t${ref}`));
    const head = line?.split("\t")[0];
    if (head === undefined || !/^[0-9a-f]{40}$/.test(head)) {
      return { error: `${source} has no ${ref}` };
    }
    return { head };
  } catch (error) {
    return { error: messageOf(error) };
  }
}

/** `module list` as text. */
export function catalogueText(entries: CatalogueEntry[]): string {
  if (entries.length === 0) return "no modules\n";
  return entries.map((e) => {
    const lines = [
      `${e.name} v${e.version} (${e.digest.slice(0, 19)}) ${e.from}`,
      `  ${e.behind.state === "no-source" ? "" : `${e.behind.state}: `}${e.behind.detail}`,
    ];
    if (e.image) lines.push(`  image ${e.image}`);
    if (e.provides.length > 0) {
      lines.push(
        `  provides: ${
          e.provides.map((p) => `${p.name} at ${p.address ?? "(no address)"}`).join(", ")
        }`,
      );
    }
    if (e.requires.length > 0) lines.push(`  requires: ${e.requires.join(", ")}`);
    lines.push(
      `  runs on: ${
        e.nodes.length === 0
          ? "no node"
          : e.nodes.map((n) => `${n.name} (${n.verdict.replace("-", " ")})`).join(", ")
      }`,
    );
    return lines.join("\n");
  }).join("\n") + "\n";
}

/** `module list --json`. */
export function catalogueJson(entries: CatalogueEntry[]): string {
  return jsonText({ modules: entries }, 2) + "\n";
}
