/**
 * The generic applier contract: one suite, run against every applier on every system it exists
 * for (on this VM: directory, file, container, action, and package with pacman (a private
 * configuration) and apk (recorded outputs) from tests/host/package_test.ts; in the lab machines:
 * service on systemd and on OpenRC, package with dpkg, and the path appliers there too). For one
 * declared resource it asserts:
 *
 * 1. observe changes nothing: the subject's state, read by other means (the runtime, the init,
 *    the filesystem), is the same before and after `observe`, and observe writes nothing to the
 *    footprint;
 * 2. the dry run's change and plan equal the real apply's (from nothing, and again after drift
 *    made by hand): the dry run stops at the plan (`act` is never called, and the subject is as
 *    it was), and the apply calls `act` once with the very plan `plan` returned, whose steps and
 *    result are the dry run's, and reports the change that plan said;
 * 3. a second apply is `unchanged`, with a plan of no steps;
 * 4. removing what is already gone (removed by hand, then the resource leaves) is not an error.
 *
 * The runner is plain functions over {@linkcode ContractCase}s and throws on the first broken
 * promise, naming the case and the step; it runs in-process through the path `mesh-host apply`
 * takes (`applyBytes`), so it can run inside a lab machine too (tests/host/contract_lab_entry.ts).
 *
 * @module
 */

import { applyBytes, type ApplyResult } from "../../host/apply.ts";
import type {
  Applier,
  ApplyContext,
  Converged,
  Plan,
  SourceFootprint,
} from "../../host/applier.ts";
import type { Resource } from "../../lib/declaration.ts";
import type { System } from "../../host/system.ts";

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

/** What the applier under test planned and did for the contract's resource in one apply. */
interface Spied {
  plans: Plan[];
  /** The plans `act` was given, and what it returned. */
  acts: { plan: Plan; result: Converged }[];
}

/**
 * `c.system` with the applier of `c.resource`'s type wrapped: every plan made and every act
 * called for the contract's resource is recorded in `spied`.
 */
function spying(c: ContractCase, spied: Spied): System {
  const inner = c.system.appliers[c.resource.type] as Applier | undefined;
  if (inner === undefined) return c.system;
  const mine = (r: Resource) => r.id === c.resource.id;
  const wrapped: Applier = {
    observe: (r, ctx) => inner.observe(r, ctx),
    async plan(r, observed, ctx) {
      const plan = await inner.plan(r, observed, ctx);
      if (mine(r)) spied.plans.push(plan);
      return plan;
    },
    async act(r, plan, ctx) {
      const result = await inner.act(r, plan, ctx);
      if (mine(r)) spied.acts.push({ plan, result });
      return result;
    },
    ...(inner.planRemoval !== undefined
      ? { planRemoval: (entry, ctx) => inner.planRemoval!(entry, ctx) }
      : {}),
    ...(inner.remove !== undefined
      ? { remove: (entry, plan, ctx) => inner.remove!(entry, plan, ctx) }
      : {}),
  };
  return { ...c.system, appliers: { ...c.system.appliers, [c.resource.type]: wrapped } };
}

async function apply(
  c: ContractCase,
  stateDir: string,
  resources: Resource[],
  dryRun = false,
  spied: Spied = { plans: [], acts: [] },
): Promise<ApplyResult> {
  return await applyBytes(encode(resources), {
    system: spying(c, spied),
    stateDir,
    version: "contract",
    trusted: true,
    dryRun,
  });
}

/** A plan as compared between a dry run and an apply: its steps and result, not its detail. */
function shapeOf(plan: Plan | undefined): unknown {
  if (plan === undefined) return undefined;
  return { steps: plan.steps, change: plan.result.change, created: plan.result.created };
}

/**
 * A dry run, then the apply, of `resources`: the dry run changes nothing and acts not at all;
 * the apply acts once on exactly the plan it made, which is the dry run's. Returns both changes.
 */
async function dryThenApply(
  c: ContractCase,
  stateDir: string,
  resources: Resource[],
  step: string,
): Promise<{ dry: string; real: string; steps: string[] }> {
  const drySpied: Spied = { plans: [], acts: [] };
  const before = await c.snapshot();
  const dry = changeOf(c, await apply(c, stateDir, resources, true, drySpied), `${step}: dry run`);
  const after = await c.snapshot();
  if (before !== after) {
    throw new ContractError(c.name, `${step}: the dry run changed the machine`, { before, after });
  }
  if (drySpied.plans.length !== 1 || drySpied.acts.length !== 0) {
    throw new ContractError(c.name, `${step}: the dry run did not stop at one plan`, {
      plans: drySpied.plans.length,
      acts: drySpied.acts.length,
    });
  }
  const realSpied: Spied = { plans: [], acts: [] };
  const real = changeOf(c, await apply(c, stateDir, resources, false, realSpied), `${step}: apply`);
  const [plan] = realSpied.plans;
  if (realSpied.plans.length !== 1 || realSpied.acts.length !== 1) {
    throw new ContractError(c.name, `${step}: the apply did not plan once and act once`, {
      plans: realSpied.plans.length,
      acts: realSpied.acts.length,
    });
  }
  if (realSpied.acts[0]!.plan !== plan) {
    throw new ContractError(c.name, `${step}: act was given another plan than plan made`, {
      planned: shapeOf(plan),
      acted: shapeOf(realSpied.acts[0]!.plan),
    });
  }
  const dryPlan = JSON.stringify(shapeOf(drySpied.plans[0]));
  const realPlan = JSON.stringify(shapeOf(plan));
  if (dryPlan !== realPlan) {
    throw new ContractError(c.name, `${step}: the dry run's plan and the apply's disagree`, {
      dry: dryPlan,
      real: realPlan,
    });
  }
  if (dry !== real || realSpied.acts[0]!.result.change !== plan!.result.change) {
    throw new ContractError(c.name, `${step}: dry run and apply disagree`, {
      dry,
      real,
      planned: plan!.result.change,
      acted: realSpied.acts[0]!.result.change,
    });
  }
  return { dry, real, steps: plan!.steps };
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
  journal: () => {
    throw new Error("observe journaled a creation");
  },
  durable: () => Promise.reject(new Error("observe journaled a creation")),
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

  // 2. the dry run's change and plan equal the real apply's, from nothing.
  if (c.before) await apply(c, stateDir, c.before);
  const first = await dryThenApply(c, stateDir, all, "first apply");
  seen.push(
    `first apply: dry run ${first.dry}, apply ${first.real}, plan [${first.steps.join(", ")}]`,
  );
  await observeChangesNothing("after the apply");

  // 3. a second apply is unchanged, with nothing to do (and its dry run says so).
  const againSpied: Spied = { plans: [], acts: [] };
  const again = changeOf(c, await apply(c, stateDir, all, false, againSpied), "second apply");
  const againDry = changeOf(c, await apply(c, stateDir, all, true), "second dry run");
  if (
    again !== "unchanged" || againDry !== "unchanged" || againSpied.plans[0]?.steps.length !== 0
  ) {
    throw new ContractError(c.name, "second apply not unchanged", {
      again,
      againDry,
      steps: againSpied.plans[0]?.steps,
    });
  }
  seen.push("second apply: unchanged");

  // 2 again, over drift made by hand.
  await c.drift();
  const drift = await dryThenApply(c, stateDir, all, "over drift");
  if (drift.real === "unchanged") {
    throw new ContractError(c.name, "the apply over drift changed nothing", drift);
  }
  seen.push(
    `over drift: dry run ${drift.dry}, apply ${drift.real}, plan [${drift.steps.join(", ")}]`,
  );

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
