/**
 * Provisions and bindings (lib/binding.ts, control/module_file.ts): a module providing a
 * provision with an address, a module requiring it, and the binding file push writes into the
 * consuming node's signed declaration; a provision with no provider, two, or a provider with no
 * address refuses that node's push naming both, and the rest of the fleet is pushed. Real
 * PostgreSQL and RabbitMQ.
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { openBroker } from "../../lib/amqp.ts";
import { type DeclarationMessage, nodeQueue } from "../../lib/broker.ts";
import { declarationDigest, parse } from "../../lib/declaration.ts";
import { deleteNodeAccount } from "../../control/broker_admin.ts";
import { BROKER_API_URL, BROKER_URL, controlCli, freshInventory, uniqueNode } from "./support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const endpoints = { amqp: BROKER_URL, api: BROKER_API_URL };

Deno.test(
  "push writes each required binding into the consuming node's declaration",
  opts,
  async (t) => {
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-binding-" });
    const [bound, orphan, addressless] = [
      uniqueNode("bound"),
      uniqueNode("orph"),
      uniqueNode("noad"),
    ];
    const run = async (args: string[]) => await controlCli(args, inv.env);
    const must = async (args: string[]) => {
      const out = await run(args);
      assertEquals(out.code, 0, `${args.join(" ")}: ${out.stderr}`);
      return out;
    };
    const module = async (name: string, fields: Record<string, unknown>) => {
      await Deno.writeTextFile(
        `${dir}/${name}.json`,
        JSON.stringify({
          version: 1,
          resources: [{
            id: `${name}-motd`,
            type: "file",
            path: `${dir}/${name}`,
            content: "x\n",
            mode: "0644",
          }],
          ...fields,
        }),
      );
      return await run(["module", "add", `${dir}/${name}.json`]);
    };
    try {
      await must(["broker", "setup"]);
      for (const n of [bound, orphan, addressless]) {
        await must(["node", "enroll", n, "--system", "debian", "--node-is-local"]);
      }
      assertEquals(
        (await module("registry", {
          provides: [{ name: "artifact-store", address: "registry.lan:5000" }],
        })).code,
        0,
      );
      assertEquals((await module("builder", { requires: ["artifact-store"] })).code, 0);
      assertEquals((await module("needy", { requires: ["cache-store"] })).code, 0);
      assertEquals((await module("mirror", { provides: [{ name: "mirror" }] })).code, 0);
      assertEquals((await module("mirror-user", { requires: ["mirror"] })).code, 0);
      await must(["node", "assign", bound, "builder"]);
      await must(["node", "assign", orphan, "needy"]);
      await must(["node", "assign", addressless, "mirror-user"]);

      await t.step("a module file's provisions are read by their schema, with paths", async () => {
        const out = await module("bad", {
          provides: [{ name: "Not A Name", address: "" }, { name: "x", port: 1 }],
          requires: ["a", "a"],
        });
        assertEquals(out.code, 2, out.stderr);
        assertStringIncludes(out.stderr, "provides[0].name: Must be 1 to 100 lower-case letters");
        assertStringIncludes(out.stderr, "provides[0].address: Must not be empty");
        assertStringIncludes(out.stderr, `provides[1].port: Unknown field "port"`);
        assertStringIncludes(out.stderr, 'requires[1]: Provision "a" is named twice');
        assertEquals((await inv.sql`select 1 from modules where name = 'bad'`).length, 0);
      });

      await t.step("module list shows what each module provides and requires", async () => {
        const text = (await must(["module", "list"])).stdout;
        assertMatch(
          text,
          /^registry v1 .*\n(?: {2}.*\n)*? {2}provides: artifact-store at registry\.lan:5000\n/m,
        );
        assertMatch(text, /^builder v1 .*\n(?: {2}.*\n)*? {2}requires: artifact-store\n/m);
        assertMatch(text, /^mirror v1 .*\n(?: {2}.*\n)*? {2}provides: mirror at \(no address\)\n/m);
        const json = JSON.parse((await must(["module", "list", "--json"])).stdout) as {
          modules: { name: string; provides: unknown; requires: unknown }[];
        };
        const of = (name: string) => json.modules.find((m) => m.name === name)!;
        assertEquals(of("registry").provides, [{
          name: "artifact-store",
          address: "registry.lan:5000",
        }]);
        assertEquals(of("registry").requires, []);
        assertEquals(of("builder").requires, ["artifact-store"]);
        assertEquals(of("mirror").provides, [{ name: "mirror" }]);
      });

      await t.step(
        "push --behind: the bound node is pushed, the others refused naming both",
        async () => {
          const out = await run(["push", "--behind"]);
          assertEquals(out.code, 1, out.stdout + out.stderr);
          assertMatch(out.stdout, new RegExp(`pushed generation 1 to ${bound}: never pushed`));
          assertStringIncludes(
            out.stderr,
            `cannot push to ${orphan}: its modules do not render: Cannot bind node "${orphan}": module "needy" requires provision "cache-store", and no module in the catalogue provides it`,
          );
          assertStringIncludes(
            out.stderr,
            `cannot push to ${addressless}: its modules do not render: Cannot bind node "${addressless}": module "mirror-user" requires provision "mirror", and module "mirror", which provides it, gives it no address`,
          );
          const rows = await inv.sql<{ node: string }[]>`select node from declarations`;
          assertEquals(rows.map((r) => r.node), [bound]);
        },
      );

      await t.step("the binding file is part of the signed declaration published", async () => {
        const s = await openBroker(BROKER_URL);
        let message: DeclarationMessage | undefined;
        try {
          const got = await s.channel.get(nodeQueue(bound), { noAck: true });
          assert(got !== false, "no declaration on the node's queue");
          message = JSON.parse(got.content.toString());
        } finally {
          await s.close();
        }
        // The digest signed is the digest of this text (lib/signing.ts).
        assertEquals(message!.digest, await declarationDigest(message!.declaration));
        const declaration = parse(message!.declaration);
        const binding = declaration.resources.find((r) =>
          r.type === "file" && r.path === "/etc/mesh/bindings/artifact-store.json"
        );
        assert(binding !== undefined && binding.type === "file", message!.declaration);
        assertEquals(binding.mode, "0640");
        assertEquals(JSON.parse(binding.content), {
          name: "artifact-store",
          address: "registry.lan:5000",
          module: "registry",
        });
        // After the module's own resources.
        assertEquals(declaration.resources.map((r) => r.id), ["builder-motd", binding.id]);
      });

      await t.step("push NODE refuses a node whose provision has no provider, exit 2", async () => {
        const out = await run(["push", orphan]);
        assertEquals(out.code, 2, out.stdout + out.stderr);
        assertStringIncludes(
          out.stderr,
          `module "needy" requires provision "cache-store", and no module in the catalogue provides it`,
        );
      });

      await t.step("two providers of one provision refuse the push naming both", async () => {
        assertEquals(
          (await module("registry-two", {
            provides: [{ name: "artifact-store", address: "other.lan:5000" }],
          })).code,
          0,
        );
        const out = await run(["push", bound]);
        assertEquals(out.code, 2, out.stdout + out.stderr);
        assertStringIncludes(
          out.stderr,
          `Cannot bind node "${bound}": module "builder" requires provision "artifact-store", and modules "registry" and "registry-two" both provide it (one provider is allowed)`,
        );
        const rows = await inv.sql`select 1 from declarations where node = ${bound}`;
        assertEquals(rows.length, 1, "nothing more was recorded");
      });
    } finally {
      for (const n of [bound, orphan, addressless]) {
        await deleteNodeAccount(endpoints, n).catch(() => {});
      }
      await inv.drop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
