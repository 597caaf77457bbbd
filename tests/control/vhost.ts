/**
 * A broker vhost of its own for one test (the shared `/` vhost's `mesh.reports` and `mesh.build`
 * queues are consumed by other test runs on this machine): created with the administrative
 * account given every permission on it, the topology set up by `mesh-control broker setup`, and
 * deleted afterwards with the broker users the test names.
 *
 * @module
 */

import { assert } from "../support/assert.ts";
import { type JsonLinesProcess, ROOT, spawnJsonLines } from "../support/mod.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import { TEST_KEYS } from "../support/signing.ts";
import {
  BROKER_API_URL,
  controlCli,
  freshInventory,
  mustControl,
  type TestInventory,
} from "./support.ts";

const API = new URL(BROKER_API_URL);
const AUTH = `Basic ${
  btoa(`${decodeURIComponent(API.username)}:${decodeURIComponent(API.password)}`)
}`;

/** Calls the management API as the administrator; returns the status and the JSON body. */
export async function brokerApi(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${API.origin}${path}`, {
    method,
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed };
}

/** A test's own vhost. */
export interface TestVhost {
  name: string;
  /** The administrative AMQP URL of the vhost. */
  amqp: string;
  /** `inv.env` with `MESH_BROKER_URL` pointing at this vhost. */
  env: Record<string, string>;
  /** Broker users to delete at the end (nodes enrolled, builders issued). */
  users: string[];
  /** Deletes the vhost and the users. */
  drop(): Promise<void>;
}

/** Creates a vhost `mesh-test-<id>`, grants the administrator on it and sets up the topology. */
export async function freshVhost(inv: TestInventory): Promise<TestVhost> {
  const name = `mesh-test-${crypto.randomUUID().slice(0, 12)}`;
  const path = encodeURIComponent(name);
  const made = await brokerApi("PUT", `/api/vhosts/${path}`, {});
  assert(made.status === 201 || made.status === 204, `creating vhost ${name}: ${made.status}`);
  const admin = decodeURIComponent(API.username);
  const granted = await brokerApi("PUT", `/api/permissions/${path}/${encodeURIComponent(admin)}`, {
    configure: ".*",
    write: ".*",
    read: ".*",
  });
  assert(granted.status === 201 || granted.status === 204, `granting ${name}: ${granted.status}`);
  const amqp = `amqp://${API.username}:${API.password}@127.0.0.1:5672/${path}`;
  const env = { ...inv.env, MESH_BROKER_URL: amqp };
  const setup = await controlCli(["broker", "setup"], env);
  assert(setup.code === 0, `broker setup in ${name}: ${setup.stderr}`);
  const users: string[] = [];
  return {
    name,
    amqp,
    env,
    users,
    drop: async () => {
      for (const user of users) await brokerApi("DELETE", `/api/users/${encodeURIComponent(user)}`);
      await brokerApi("DELETE", `/api/vhosts/${path}`);
    },
  };
}

/** Runs `fn` with a fresh inventory and a vhost of its own, and drops both afterwards. */
export async function withVhost(
  fn: (inv: TestInventory, vhost: TestVhost) => Promise<void>,
): Promise<void> {
  const inv = await freshInventory();
  const vhost = await freshVhost(inv);
  try {
    await fn(inv, vhost);
  } finally {
    await vhost.drop();
    await inv.drop();
  }
}

/**
 * Enrolls `node` (system debian, plus `extra` options) in `vhost`, noting its broker user for the
 * vhost's cleanup; returns the broker URL `node enroll` printed once.
 */
export async function enrollIn(
  vhost: TestVhost,
  node: string,
  extra: string[] = [],
): Promise<string> {
  return (await enrollPrinted(vhost, node, { extra })).url;
}

/**
 * {@linkcode enrollIn} with mesh-control's environment `env` (default the vhost's): the broker URL
 * `node enroll` printed and all it printed.
 */
export async function enrollPrinted(
  vhost: TestVhost,
  node: string,
  options: { extra?: string[]; env?: Record<string, string> } = {},
): Promise<{ url: string; stdout: string }> {
  vhost.users.push(node);
  const out = await mustControl(options.env ?? vhost.env, [
    "node",
    "enroll",
    node,
    "--system",
    "debian",
    // The test's links run on this machine, and the broker listens on its loopback address only.
    "--node-is-local",
    ...(options.extra ?? []),
  ]);
  const url = out.stdout.split("\n").find((l) => /^amqps?:\/\//.test(l));
  assert(url, out.stdout);
  return { url, stdout: out.stdout };
}

/**
 * A running `mesh-host link` of a test node against `url`, printing each report as JSON: the
 * host without its carried bundle (never the real bundle on this machine), no local declarations,
 * no mesh-reconcile (its drift is "not checked" rather than an alarm about a result file that will
 * never come), its state in `stateDir`, an interval of `options.every` (default 2s), verifying with
 * `options.controlKey` (default the test key's public half, tests/support/signing.ts; give a file
 * of the test's own when it rotates).
 */
export function startTestLink(
  url: string,
  stateDir: string,
  options: { every?: string; entry?: string; controlKey?: string } = {},
): JsonLinesProcess<ReportMessage> {
  return spawnJsonLines([
    options.entry ?? `${ROOT}tests/support/host_no_bundle.ts`,
    "link",
    "--declarations",
    "/nonexistent/mesh-declarations",
    "--broker",
    url,
    "--state-dir",
    stateDir,
    "--every",
    options.every ?? "2s",
    "--reconcile-result",
    "none",
    "--control-key",
    options.controlKey ?? TEST_KEYS.controlKey,
    "--json",
  ]);
}
