/**
 * Signed declarations (docs/design.md, "Signed declarations"), for real: a real link on this
 * machine, the real broker in a vhost of its own, a real inventory, `mesh-control` as a process.
 *
 * - The "Done when": a declaration forged onto a node's queue with the broker's
 *   administrative account (publisher confirms) is refused, nothing applied, the refusal reported
 *   and shown by control with its reason, while control's pushes before and after are applied.
 * - `key rotate`: a node follows a rotation signed by the key it holds, keeps the new key in its
 *   key file, and a node that missed one says so.
 * - `key init` makes the key once; `push` refuses without a usable key, `node enroll` says where
 *   the node's key comes from.
 *
 * @module
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import type { JsonLinesProcess } from "../support/mod.ts";
import {
  declarationKey,
  type DeclarationMessage,
  EXCHANGE,
  type ReportMessage,
} from "../../lib/broker.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { declarationDigest } from "../../lib/declaration.ts";
import { readControlKey } from "../../lib/signing.ts";
import { controlCli, mustControl, uniqueNode, waitFor } from "./support.ts";
import { enrollIn, startTestLink, type TestVhost, withVhost } from "./vhost.ts";
import { makeTestKeys, signed, TEST_KEYS } from "../support/signing.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

interface Machine {
  name: string;
  verdict: string;
  generation?: number;
  reportedGeneration?: number;
  problems: { message: string }[];
}

/** Ingests what waits, then `node`'s machine on the board. */
async function machine(env: Record<string, string>, node: string): Promise<Machine> {
  await mustControl(env, ["ingest", "--drain"]);
  const out = await mustControl(env, ["board", "--json", "--grace", "60s"]);
  return (JSON.parse(out.stdout).machines as Machine[]).find((m) => m.name === node)!;
}

/** Adds (or replaces) the module `m-<node>`: one file `path` holding `content`. */
async function moduleOf(
  env: Record<string, string>,
  dir: string,
  node: string,
  path: string,
  content: string,
) {
  await Deno.writeTextFile(
    `${dir}/m.json`,
    JSON.stringify({
      version: 1,
      resources: [{ id: "f", type: "file", path, content, mode: "0644" }],
    }),
  );
  await mustControl(env, ["module", "add", `${dir}/m.json`, "--name", `m-${node}`]);
}

/** Publishes `body` onto `node`'s queue as the broker's administrator, confirmed. */
async function publishAsAdmin(vhost: TestVhost, node: string, body: unknown): Promise<void> {
  const session = await openBroker(vhost.amqp);
  try {
    await publishConfirmed(session.channel, [{
      exchange: EXCHANGE,
      routingKey: declarationKey(node),
      body: new TextEncoder().encode(JSON.stringify(body)),
    }]);
  } finally {
    await session.close();
  }
}

Deno.test(
  "a declaration forged onto a node's queue with the broker's administrative account is refused and reported; control's pushes before and after are applied",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const node = uniqueNode("forge");
      const dir = await Deno.makeTempDir({ prefix: "mesh-forge-" });
      const file = `${dir}/f`;
      let link: JsonLinesProcess<ReportMessage> | undefined;
      try {
        // Intervals of an hour: every report below is a push's, and a refusal stays the node's
        // last report until the next push.
        link = startTestLink(await enrollIn(vhost, node), `${dir}/state`, { every: "1h" });
        await moduleOf(vhost.env, dir, node, file, "before\n");
        await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
        await mustControl(vhost.env, ["push", node]);
        await waitFor("control's first push applied", async () => {
          const m = await machine(vhost.env, node);
          return m.verdict === "ok" && m.reportedGeneration === 1;
        }, 60_000);
        assertEquals(await Deno.readTextFile(file), "before\n");
        const kept = await Deno.readTextFile(`${dir}/state/link/declaration.json`);
        const epoch = (await inv.sql<{ epoch: string }[]>`
          select epoch::text as epoch from nodes where name = ${node}`)[0]!.epoch;

        // What an attacker with the administrative credential can make: a well-formed message,
        // the node's name and epoch, the next generation, its own content. Unsigned, then signed
        // by a key of its own under the control plane's key id.
        const text = JSON.stringify({
          version: 1,
          resources: [
            { id: "f", type: "file", path: file, content: "forged\n", mode: "0644" },
            { id: "g", type: "file", path: `${dir}/planted`, content: "x\n", mode: "0644" },
          ],
        });
        const forged: DeclarationMessage = {
          kind: "declaration",
          node,
          generation: 2,
          digest: await declarationDigest(text),
          pushedAt: new Date().toISOString(),
          epoch,
          declaration: text,
        };
        const attacker = await makeTestKeys(dir);
        const cases: [DeclarationMessage, RegExp][] = [
          [forged, /^the declaration message is not signed: /],
          [
            await signed(forged, { key: { ...attacker.key, keyId: TEST_KEYS.key.keyId } }),
            new RegExp(`^the signature does not verify with key ${TEST_KEYS.key.keyId}: `),
          ],
          [
            await signed(forged, { key: attacker.key }),
            new RegExp(
              `^signed by key ${attacker.key.keyId}, this node holds key ${TEST_KEYS.key.keyId}: it missed a rotation`,
            ),
          ],
        ];
        for (const [message, problem] of cases) {
          const before = link.lines.length;
          await publishAsAdmin(vhost, node, message);
          const report = await waitFor(
            "the link's report of the refusal",
            () => link!.lines.slice(before).find((r) => r.trigger === "push"),
            30_000,
          );
          assertEquals([report.outcome, report.generation, report.epoch], ["refused", 0, epoch]);
          assertMatch(report.problems[0]!.message, problem);
          // Nothing applied, the node's state unchanged.
          assertEquals(await Deno.readTextFile(file), "before\n");
          assert(!(await exists(`${dir}/planted`)), "the forged declaration's file was written");
          assertEquals(await Deno.readTextFile(`${dir}/state/link/declaration.json`), kept);
          // Control shows it, with the reason: the node refused, an alarm in status.
          const m = await waitFor("control shows the refusal", async () => {
            const m = await machine(vhost.env, node);
            return m.verdict === "refused" && problem.test(m.problems[0]?.message ?? "")
              ? m
              : undefined;
          }, 30_000);
          assertEquals(m.generation, 1);
          const status = await controlCli(["status", "--grace", "60s"], vhost.env);
          assertEquals(status.code, 1, status.stdout);
          assertMatch(status.stdout, new RegExp(`${node} +refused`));
          assertMatch(status.stdout, new RegExp(problem.source.slice(1, 30)));
        }

        // Control's next push is applied: generation 2, the forged generation's number.
        await moduleOf(vhost.env, dir, node, file, "after\n");
        await mustControl(vhost.env, ["push", node]);
        await waitFor("control's push after the forgeries applied", async () => {
          const m = await machine(vhost.env, node);
          return m.verdict === "ok" && m.reportedGeneration === 2;
        }, 60_000);
        assertEquals(await Deno.readTextFile(file), "after\n");
        assert(!(await exists(`${dir}/planted`)), "the forged declaration's file was written");
      } finally {
        await link?.kill();
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

Deno.test(
  "key rotate: the node follows a rotation signed by the key it holds; a node that missed one says so",
  opts,
  () =>
    withVhost(async (_inv, vhost) => {
      const node = uniqueNode("rot");
      const dir = await Deno.makeTempDir({ prefix: "mesh-rotate-" });
      const file = `${dir}/f`;
      // A control plane key of this test's own (it is rotated), and the node's copy of it.
      const keys = await makeTestKeys(dir);
      const env = { ...vhost.env, MESH_SIGNING_KEY: keys.signingKey };
      const nodeKey = `${dir}/node-control.pub`;
      await Deno.copyFile(keys.controlKey, nodeKey);
      const key = (extra: string[]) =>
        mustControl(env, ["key", ...extra, "--public-key", `${dir}/control.pub`]);
      let link: JsonLinesProcess<ReportMessage> | undefined;
      try {
        const url = await enrollIn(vhost, node);
        link = startTestLink(url, `${dir}/state`, { every: "1h", controlKey: nodeKey });
        await moduleOf(env, dir, node, file, "one\n");
        await mustControl(env, ["node", "assign", node, `m-${node}`]);
        const pushApplied = async (generation: number, content: string) => {
          await moduleOf(env, dir, node, file, content);
          await mustControl(env, ["push", node]);
          await waitFor(`generation ${generation} applied`, async () => {
            const m = await machine(env, node);
            return m.verdict === "ok" && m.reportedGeneration === generation;
          }, 60_000);
          assertEquals(await Deno.readTextFile(file), content);
        };
        await pushApplied(1, "one\n");

        const rotated = await key(["rotate"]);
        const [, from, to] = /from (ed25519:[0-9a-f]{32}) to (ed25519:[0-9a-f]{32})/.exec(
          rotated.stdout,
        )!;
        assertEquals(from, keys.key.keyId);
        assert(to !== from);
        // The old private key is gone, the handoff kept, 0600.
        assertEquals((await Deno.stat(keys.signingKey)).mode! & 0o777, 0o600);
        assertEquals((await Deno.stat(`${keys.signingKey}.handoff`)).mode! & 0o777, 0o600);
        assertEquals((await readControlKey(`${dir}/control.pub`)).keyId, to);

        // The next push is signed by the new key and hands it over: taken, and kept.
        await pushApplied(2, "two\n");
        assertEquals((await readControlKey(nodeKey)).keyId, to);
        assertEquals((await Deno.stat(nodeKey)).mode! & 0o777, 0o644);
        assertMatch(
          link.stderr(),
          new RegExp(`took the control plane's new key ${to}, handed over by key ${from}`),
        );
        // And again without the handoff's help: a push signed by the key the node now holds.
        await pushApplied(3, "three\n");

        // The node goes away; control rotates twice; the node comes back holding the key of two
        // rotations ago: it says it missed a rotation, and applies nothing.
        await link.kill();
        link = undefined;
        const second = await key(["rotate"]);
        const third = await key(["rotate"]);
        const newest = /to (ed25519:[0-9a-f]{32})/.exec(third.stdout)![1]!;
        const middle = /to (ed25519:[0-9a-f]{32})/.exec(second.stdout)![1]!;
        await moduleOf(env, dir, node, file, "four\n");
        await mustControl(env, ["push", node]);
        link = startTestLink(url, `${dir}/state`, { every: "1h", controlKey: nodeKey });
        const refusal = await waitFor(
          "the refusal",
          () => link!.lines.find((r) => r.trigger === "push"),
          30_000,
        );
        assertEquals(refusal.outcome, "refused");
        assertEquals(
          refusal.problems[0]!.message,
          `signed by key ${newest}, this node holds key ${to}: it missed a rotation (the message hands over from key ${middle}, not from the key this node holds; give it the control plane's public key again: mesh-control key show)`,
        );
        assertEquals(await Deno.readTextFile(file), "three\n");
        assertEquals((await readControlKey(nodeKey)).keyId, to);
        // Given the key again (what key show prints), it takes the next push.
        const shown = await mustControl(env, ["key", "show"]);
        assertMatch(shown.stderr, new RegExp(`key ${newest}: write it at /etc/mesh/control.pub`));
        await Deno.writeTextFile(nodeKey, shown.stdout);
        await link.kill();
        link = startTestLink(url, `${dir}/state`, { every: "1h", controlKey: nodeKey });
        await pushApplied(5, "five\n");
      } finally {
        await link?.kill();
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

Deno.test(
  "key init makes the key once; push refuses without a usable key (exit 2)",
  opts,
  () =>
    withVhost(async (_inv, vhost) => {
      const dir = await Deno.makeTempDir({ prefix: "mesh-keyinit-" });
      const node = uniqueNode("keys");
      try {
        const signingKey = `${dir}/secrets/signing.key`;
        const env = { ...vhost.env, MESH_SIGNING_KEY: signingKey };
        await enrollIn(vhost, node);

        // No key: push refuses, saying how to make one; nothing is recorded.
        const none = await controlCli(["push", node], env);
        assertEquals(none.code, 2, none.stderr);
        assertMatch(
          none.stderr,
          new RegExp(
            `Cannot sign declarations: there is no signing key "${signingKey}" \\(make it once with mesh-control key init`,
          ),
        );
        const behind = await controlCli(["push", "--behind"], env);
        assertEquals(behind.code, 2, behind.stderr);
        assertMatch(behind.stderr, /there is no signing key/);

        // key init: the private key 0600 in a directory 0700, the public key 0644.
        const made = await mustControl(env, [
          "key",
          "init",
          "--public-key",
          `${dir}/control.pub`,
        ]);
        const id = /made the signing key (ed25519:[0-9a-f]{32})/.exec(made.stdout)![1]!;
        assertEquals((await Deno.stat(signingKey)).mode! & 0o777, 0o600);
        assertEquals((await Deno.stat(`${dir}/secrets`)).mode! & 0o777, 0o700);
        assertEquals((await Deno.stat(`${dir}/control.pub`)).mode! & 0o777, 0o644);
        assertEquals((await readControlKey(`${dir}/control.pub`)).keyId, id);
        // Made once: never replaced.
        const before = await Deno.readTextFile(signingKey);
        const again = await controlCli(["key", "init", "--public-key", `${dir}/other.pub`], env);
        assertEquals(again.code, 2);
        assertMatch(again.stderr, new RegExp(`"${signingKey}" exists already`));
        assertEquals(await Deno.readTextFile(signingKey), before);
        assert(!(await exists(`${dir}/other.pub`)));

        // Enrollment says where the node's key comes from, and prints it.
        const enrolled = await mustControl(env, [
          "node",
          "enroll",
          uniqueNode("keys2"),
          "--system",
          "debian",
          "--node-is-local",
        ]);
        vhost.users.push(/enrolled (\S+)/.exec(enrolled.stdout)![1]!);
        assertMatch(
          enrolled.stdout,
          new RegExp(
            `the control plane's public key ${id}: write it at /etc/mesh/control.pub on the node`,
          ),
        );
        assert(enrolled.stdout.includes(await Deno.readTextFile(`${dir}/control.pub`)));

        // A key too open, one that is not a key, a public key for a private one: exit 2, naming it.
        const refused = async (problem: RegExp) => {
          const run = await controlCli(["push", node], env);
          assertEquals(run.code, 2, run.stderr);
          assertMatch(run.stderr, problem);
        };
        await Deno.chmod(signingKey, 0o640);
        await refused(
          new RegExp(
            `Cannot use the key file "${signingKey}": its mode is 0640, and a private key file must be 0600`,
          ),
        );
        await Deno.writeTextFile(signingKey, "garbage\n", { mode: 0o600 });
        await Deno.chmod(signingKey, 0o600);
        await refused(new RegExp(`"${signingKey}": not one PEM block "PRIVATE KEY"`));
        await Deno.copyFile(`${dir}/control.pub`, signingKey);
        await Deno.chmod(signingKey, 0o600);
        await refused(new RegExp(`"${signingKey}": not one PEM block "PRIVATE KEY"`));
        await Deno.writeTextFile(
          signingKey,
          "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        );
        await refused(new RegExp(`"${signingKey}": not an Ed25519 private key \\(PKCS#8\\)`));
        await Deno.remove(signingKey);
        await Deno.mkdir(signingKey);
        await refused(new RegExp(`"${signingKey}": it is a directory, not a regular file`));
        // No declaration was recorded by any of them.
        const pushed = await mustControl(env, ["board", "--json"]);
        const m = JSON.parse(pushed.stdout).machines.find((x: { name: string }) => x.name === node);
        assertEquals(m.generation, undefined);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}
