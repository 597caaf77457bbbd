/**
 * The generic applier contract: one suite, run against every applier on every system it exists
 * for (on this VM: directory, file, container, action; in the lab machines: service on systemd
 * and on OpenRC, package with dpkg, and the path appliers there too). For one declared resource
 * it asserts:
 *
 * 1. observe changes nothing: the subject's state, read by other means (the runtime, the init,
 *    the filesystem), is the same before and after `observe`, and observe writes nothing to the
 *    footprint;
 * 2. the dry run's change equals the real apply's change (from nothing, and again after drift
 *    made by hand);
 * 3. a second apply is `unchanged`;
 * 4. removing what is already gone (removed by hand, then the resource leaves) is not an error.
 *
 * The runner is plain functions over {@linkcode ContractCase}s and throws on the first broken
 * promise, naming the case and the step; it runs in-process through the path `mesh-host apply`
 * takes (`applyBytes`), so it can run inside a lab machine too (tests/host/contract_lab_entry.ts).
 *
 * @module
 */

import { applyBytes, type ApplyResult } from "../../host/apply.ts";
import type { ApplyContext, SourceFootprint } from "../../host/applier.ts";
import type { Resource } from "../../host/declaration.ts";
import type { System } from "../../systems/mod.ts";

/** One resource on one system, and how to see its subject without the applier. */
export interface ContractCase {
  /** e.g. "service on systemd". */
  name: string;
  system: System;
  /** Resources the subject needs first (a unit file for a service), applied with it. */
  before?: Resource[];
  resource: Resource;
  /** The subject's state, read by other means than the applier, as text. */
  snapshot(): Promise<string>;
  /** Drift made by hand, which the applier must undo (changes the snapshot). */
  drift(): Promise<void>;
  /** Removes the subject by hand (for "removing what is gone is not an error"). */
  removeByHand(): Promise<void>;
}

/** A broken contract: which case, which promise, and what was seen. */
export class ContractError extends Error {
  constructor(name: string, step: string, seen: unknown) {
    super(`${name}: ${step}: ${typeof seen === "string" ? seen : JSON.stringify(seen)}`);
    this.name = "ContractError";
  }
}

const encode = (resources: Resource[]) =>
  new TextEncoder().encode(JSON.stringify({ version: 1, resources }));

async function apply(
  c: ContractCase,
  stateDir: string,
  resources: Resource[],
  dryRun = false,
): Promise<ApplyResult> {
  return await applyBytes(encode(resources), {
    system: c.system,
    stateDir,
    version: "contract",
    trusted: true,
    dryRun,
  });
}

function changeOf(c: ContractCase, r: ApplyResult, step: string): string {
  const change = r.changes.find((x) => x.id === c.resource.id)?.change;
  if (r.outcome !== "applied" || change === undefined) throw new ContractError(c.name, step, r);
  return change;
}

/** A footprint that refuses every write: observe must not write one. */
const readOnlyFootprint: SourceFootprint = {
  source: "contract",
  find: () => undefined,
  intend: () => Promise.reject(new Error("observe journaled a creation")),
  saveOriginal: () => Promise.reject(new Error("observe saved an original")),
  readOriginal: () => Promise.reject(new Error("observe read an original")),
};

/**
 * Runs the contract for `c` with a fresh state directory `stateDir`; returns what each step saw
 * (for the test's own message), throws {@linkcode ContractError} on the first broken promise.
 */
export async function runContract(c: ContractCase, stateDir: string): Promise<string[]> {
  const seen: string[] = [];
  const all = [...(c.before ?? []), c.resource];
  const applier = c.system.appliers[c.resource.type] as
    | { observe(r: Resource, ctx: ApplyContext): Promise<unknown> }
    | undefined;
  if (applier === undefined) throw new ContractError(c.name, "applier", "none on this system");

  // 1. observe changes nothing (before the subject exists, and after).
  const observeChangesNothing = async (when: string) => {
    const before = await c.snapshot();
    await applier.observe(c.resource, {
      dryRun: false,
      store: readOnlyFootprint,
      ids: { users: new Map(), groups: new Map() },
      declaration: { version: 1, resources: all },
      written: new Set(),
      cache: new Map(),
    });
    const after = await c.snapshot();
    if (before !== after) {
      throw new ContractError(c.name, `observe changed the machine (${when})`, { before, after });
    }
    seen.push(`observe (${when}): nothing changed`);
  };
  await observeChangesNothing("before the first apply");

  // 2. the dry run's change equals the real apply's, from nothing.
  if (c.before) await apply(c, stateDir, c.before);
  const dry = changeOf(c, await apply(c, stateDir, all, true), "dry run");
  const real = changeOf(c, await apply(c, stateDir, all), "apply");
  if (dry !== real) {
    throw new ContractError(c.name, "dry run and apply disagree", { dry, real });
  }
  seen.push(`first apply: dry run ${dry}, apply ${real}`);
  await observeChangesNothing("after the apply");

  // 3. a second apply is unchanged (and its dry run says so).
  const again = changeOf(c, await apply(c, stateDir, all), "second apply");
  const againDry = changeOf(c, await apply(c, stateDir, all, true), "second dry run");
  if (again !== "unchanged" || againDry !== "unchanged") {
    throw new ContractError(c.name, "second apply not unchanged", { again, againDry });
  }
  seen.push("second apply: unchanged");

  // 2 again, over drift made by hand.
  await c.drift();
  const driftDry = changeOf(c, await apply(c, stateDir, all, true), "dry run over drift");
  const driftReal = changeOf(c, await apply(c, stateDir, all), "apply over drift");
  if (driftDry !== driftReal || driftReal === "unchanged") {
    throw new ContractError(c.name, "dry run and apply disagree over drift", {
      driftDry,
      driftReal,
    });
  }
  seen.push(`over drift: dry run ${driftDry}, apply ${driftReal}`);

  // 4. removing what is already gone is not an error.
  await c.removeByHand();
  const gone = await apply(c, stateDir, c.before ?? []);
  const removal = gone.changes.find((x) => x.id === c.resource.id)?.change;
  if (gone.outcome !== "applied" || (removal !== "removed" && removal !== "forgotten")) {
    throw new ContractError(c.name, "removing what is gone", gone);
  }
  seen.push(`removed by hand, then left the declaration: ${removal}`);
  return seen;
}
