/**
 * Telling nodes what to be: render each node's declaration from its modules, record it as the
 * node's next generation and publish it persistently with publisher confirms, all or nothing
 * (the generations are committed only after every publish is confirmed), and `push --behind`'s
 * choice of which nodes need one, each with why.
 *
 * @module
 */

import type { ConfirmChannel } from "amqplib";
import { AmqpError, type Outgoing, publishConfirmed } from "../lib/amqp.ts";
import { formatDuration } from "../lib/duration.ts";
import { declarationKey, type DeclarationMessage, EXCHANGE, nodeQueue } from "../lib/broker.ts";
import type { Sql } from "./db.ts";
import { type Handoff, signDeclaration, type SigningKey } from "../lib/signing.ts";
import {
  InputError,
  type NodeState,
  readNodeStates,
  renderDeclarations,
  type Rendered,
  requireNode,
  sameSince,
} from "./inventory.ts";
import { VERDICT_WORDS } from "./state.ts";

/**
 * Where a push publishes and what it signs with: every declaration published carries the
 * control plane's signature (lib/signing.ts; docs/design.md, "Signed declarations"), and the key
 * handoff of the last rotation when there is one.
 */
export interface Publisher {
  channel: ConfirmChannel;
  /** The control plane's signing key (control/signer.ts `readSigner`). */
  key: SigningKey;
  /** The last rotation's handoff to `key`, signed by the key before it. */
  handoff?: Handoff;
}

/** One node pushed to. */
export interface Pushed {
  node: string;
  generation: number;
  digest: string;
  total: number;
  pushedAt: Date;
  /** Why it was pushed (push --behind), in words. */
  why?: string;
  /** Said when the node has been failing the same way for longer than `stuckAfter`. */
  stuck?: string;
}

/**
 * Pushes the rendered declarations: one transaction recording each node's next generation,
 * committed only after the broker confirmed every message. Each message is signed with
 * `publisher.key` over its node, epoch, generation, digest and push time.
 *
 * @throws {AmqpError} when any publish is refused, not confirmed or unroutable (nothing is
 *   recorded: the transaction rolls back).
 */
export async function publishRendered(
  sql: Sql,
  publisher: Publisher,
  rendered: Rendered[],
): Promise<Pushed[]> {
  if (rendered.length === 0) return [];
  return await sql.begin(async (tx) => {
    // One push at a time per node: the generation is max + 1, within the node's epoch (a node
    // removed took its declarations with it, so a name enrolled again starts from 1).
    await tx`select name from nodes where name = any(${rendered.map((r) => r.node)})
             order by name for update`;
    const rows = await tx<{ node: string; generation: number; pushed_at: Date; epoch: string }[]>`
      insert into declarations (node, generation, digest, body, total, epoch)
      select x.node,
        coalesce((select max(d.generation) from declarations d where d.node = x.node), 0) + 1,
        x.digest, x.body, x.total, (select n.epoch from nodes n where n.name = x.node)
      from unnest(${rendered.map((r) => r.node)}::text[], ${
      rendered.map((r) => r.digest)
    }::text[], ${rendered.map((r) => r.text)}::text[], ${rendered.map((r) => r.total)}::int[])
        as x(node, digest, body, total)
      returning node, generation, pushed_at, epoch::text as epoch`;
    const byNode = new Map(rows.map((r) => [r.node, r]));
    const encoder = new TextEncoder();
    const messages: Outgoing[] = [];
    const pushed: Pushed[] = [];
    for (const r of rendered) {
      const row = byNode.get(r.node)!;
      const fields = {
        node: r.node,
        generation: row.generation,
        digest: r.digest,
        pushedAt: row.pushed_at.toISOString(),
        epoch: row.epoch,
      };
      const signed = await signDeclaration(publisher.key, fields);
      const message: DeclarationMessage = {
        kind: "declaration",
        ...fields,
        declaration: r.text,
        keyId: signed.keyId,
        signature: signed.signature,
        ...(publisher.handoff ? { handoff: publisher.handoff } : {}),
      };
      messages.push({
        exchange: EXCHANGE,
        routingKey: declarationKey(r.node),
        body: encoder.encode(JSON.stringify(message)),
        options: {
          type: "declaration",
          messageId: `${r.node}:${row.generation}`,
          timestamp: Math.floor(row.pushed_at.getTime() / 1000),
        },
      });
      pushed.push({
        node: r.node,
        generation: row.generation,
        digest: r.digest,
        total: r.total,
        pushedAt: row.pushed_at,
      });
    }
    await publishConfirmed(publisher.channel, messages);
    return pushed;
  });
}

/**
 * `push NODE`: renders and pushes one node's declaration.
 *
 * @throws {InputError} when the node is not enrolled or its modules do not render.
 */
export async function pushNode(sql: Sql, publisher: Publisher, node: string): Promise<Pushed> {
  await requireNode(sql, node);
  const rendered = await renderDeclarations(sql, [node]);
  const [pushed] = await publishRendered(sql, publisher, rendered);
  return pushed!;
}

/** A node `push --behind` looked at and did not push, and why. */
export interface Skipped {
  node: string;
  why: string;
}

/** What `push --behind` did: pushed (each with why), and nodes it left with why. */
export interface BehindResult {
  pushed: Pushed[];
  /** Nodes with nothing to push (never pushed, no modules). */
  skipped: Skipped[];
  /** Behind nodes that could not be pushed (modules that do not render, a queue that is gone). */
  unpushable: Skipped[];
  /**
   * Nodes left waiting: pushed a declaration they have not reported on yet, identical to what
   * their modules render now. Not pushed again: the generation and the time it was first pushed
   * stay (how long a declaration has waited is what an episodic node is judged by).
   */
  waiting: Skipped[];
  /** Nodes looked at. */
  nodes: number;
}

/** Options for {@linkcode pushBehind}. */
export interface BehindOptions {
  /** A node failing the same way for longer than this (ms) is said about (default 1 hour). */
  stuckAfter?: number;
  /** Now, for tests (default the clock). */
  now?: Date;
  /** Decide and say, publish nothing. */
  dryRun?: boolean;
}

/**
 * Why `node` is behind, or undefined when its last report is a clean apply of its current
 * declaration and its modules still render to that declaration.
 */
export function behindReason(node: NodeState, rendered: Rendered | undefined): string | undefined {
  const { said: verdict, applied, total } = node;
  const d = node.declaration;
  const r = node.report;
  switch (verdict) {
    case "never-spoke":
      return d === undefined
        ? "never pushed, never spoke"
        : `never spoke (generation ${d.generation} pushed ${d.pushedAt.toISOString()})`;
    case "not-pushed":
      return "linked and reporting, never pushed a declaration";
    case "outstanding":
      if (r!.outcome === "undeclared") {
        return `outstanding: generation ${d!.generation} pushed ${
          d!.pushedAt.toISOString()
        }, its link says it holds no declaration yet`;
      }
      return `outstanding: generation ${d!.generation} pushed ${
        d!.pushedAt.toISOString()
      }, last report is for generation ${r!.generation}`;
    case "refused":
      return `refused generation ${r!.generation} (${applied} of ${total} applied): ${
        firstProblem(node)
      }`;
    case "failed":
      return `failed generation ${r!.generation} (${applied} of ${total} applied): ${
        firstProblem(node)
      }`;
    case "unknown-claim":
      return `unknown claim: ${node.claim}`;
    case "ok":
      if (rendered !== undefined && rendered.digest !== d!.digest) {
        return `its modules changed since generation ${d!.generation} (${
          rendered.modules.map((m) => `${m.name} v${m.version}`).join(", ") || "none assigned now"
        })`;
      }
      return undefined;
  }
}

function firstProblem(node: NodeState): string {
  const p = node.report?.problems[0];
  if (p === undefined) return "no problem reported";
  const where = p.id ?? p.path;
  return `${where ? `${where}: ` : ""}${p.message}`;
}

/**
 * `push --behind`: pushes to every node whose last report is not a clean apply of its current
 * declaration (or whose modules changed since), each with why. A node failing the same way for
 * longer than `stuckAfter` is pushed to anyway, and that is said. A node never pushed and with
 * no modules assigned is skipped and said.
 *
 * @throws {InputError} when a behind node's modules do not render (nothing is pushed).
 */
export async function pushBehind(
  sql: Sql,
  publisher: Publisher | undefined,
  options: BehindOptions = {},
): Promise<BehindResult> {
  const states = await readNodeStates(sql);
  // A node linked and never pushed is given its declaration even when no module is assigned (the
  // empty one): it is behind, never given one. A node never heard with none is skipped, as before.
  const renderable = states.filter((s) =>
    s.modules.length > 0 || s.declaration !== undefined || s.said === "not-pushed"
  );
  const { renders, unrenderable } = await renderEach(sql, renderable.map((s) => s.name));
  const behind: { node: NodeState; why: string }[] = [];
  const skipped: Skipped[] = [];
  const unpushable: Skipped[] = [];
  const waiting: Skipped[] = [];
  for (const node of states) {
    const cannot = unrenderable.get(node.name);
    if (cannot !== undefined) {
      // One node whose modules do not combine must not hold back the rest of the fleet.
      unpushable.push({ node: node.name, why: `its modules do not render: ${cannot}` });
      continue;
    }
    const rendered = renders.get(node.name);
    const why = behindReason(node, rendered);
    if (why === undefined) continue;
    if (rendered === undefined) {
      skipped.push({ node: node.name, why: `${why}; no modules assigned, nothing to push` });
      continue;
    }
    const left = waitingReason(node, rendered);
    if (left !== undefined) {
      waiting.push({ node: node.name, why: left });
      continue;
    }
    behind.push({ node, why });
  }
  const stuckAfter = options.stuckAfter ?? 60 * 60 * 1000;
  const now = options.now ?? new Date();
  const since = await sameSince(
    sql,
    behind.filter((b) => b.node.said === "failed" || b.node.said === "refused").map((b) =>
      b.node.name
    ),
  );
  const stuck = new Map<string, string>();
  for (const [name, start] of since) {
    const age = now.getTime() - start.getTime();
    if (age >= stuckAfter) {
      stuck.set(
        name,
        `${
          VERDICT_WORDS[states.find((s) => s.name === name)!.said]
        } the same way since ${start.toISOString()} (${
          formatDuration(age)
        }); pushed anyway: the cause may have been fixed, and this was asked for`,
      );
    }
  }
  let toPush = behind.map((b) => renders.get(b.node.name)!);
  let pushed: Pushed[];
  if (options.dryRun || publisher === undefined) {
    pushed = toPush.map((r) => ({
      node: r.node,
      generation: 0,
      digest: r.digest,
      total: r.total,
      pushedAt: now,
    }));
  } else {
    try {
      pushed = await publishRendered(sql, publisher, toPush);
    } catch (error) {
      if (!(error instanceof AmqpError) || !error.unroutable) throw error;
      // Nothing was recorded (the transaction rolled back). The nodes whose queue is gone are
      // named; the rest are pushed again, once.
      const gone = new Set(error.returnedKeys);
      for (const r of toPush.filter((r) => gone.has(declarationKey(r.node)))) {
        unpushable.push({
          node: r.node,
          why: `its queue ${nodeQueue(r.node)} does not exist on the broker (nothing is bound for ${
            declarationKey(r.node)
          })`,
        });
      }
      toPush = toPush.filter((r) => !gone.has(declarationKey(r.node)));
      pushed = await publishRendered(sql, publisher, toPush);
    }
  }
  const whyOf = new Map(behind.map((b) => [b.node.name, b.why]));
  for (const p of pushed) {
    p.why = whyOf.get(p.node)!;
    const s = stuck.get(p.node);
    if (s !== undefined) p.stuck = s;
  }
  return { pushed, skipped, unpushable, waiting, nodes: states.length };
}

/**
 * Why `node` is left waiting rather than pushed again, or undefined: it was pushed a declaration
 * it has not reported on (outstanding, or never spoke since), and its modules render to that
 * same declaration now. Pushing it again would make a new generation of identical content and
 * reset the time it was first pushed, and reach the node no sooner: its queue keeps the latest.
 */
export function waitingReason(node: NodeState, rendered: Rendered): string | undefined {
  const d = node.declaration;
  if (d === undefined || rendered.digest !== d.digest) return undefined;
  const verdict = node.said;
  if (verdict !== "outstanding" && verdict !== "never-spoke") return undefined;
  return `left generation ${d.generation} waiting, pushed ${d.pushedAt.toISOString()}: ${
    verdict === "never-spoke" ? "it has never spoken" : "it has not reported on it yet"
  }, and its modules render the same declaration`;
}

/**
 * Renders each node's declaration; a node whose modules do not render is set apart with why,
 * instead of failing every other node's.
 */
async function renderEach(
  sql: Sql,
  names: string[],
): Promise<{ renders: Map<string, Rendered>; unrenderable: Map<string, string> }> {
  const unrenderable = new Map<string, string>();
  try {
    const all = await renderDeclarations(sql, names);
    return { renders: new Map(all.map((r) => [r.node, r])), unrenderable };
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
  }
  const renders = new Map<string, Rendered>();
  for (const name of names) {
    try {
      const [r] = await renderDeclarations(sql, [name]);
      renders.set(name, r!);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      unrenderable.set(name, error.message);
    }
  }
  return { renders, unrenderable };
}

export { InputError };
