/**
 * `mesh-host link` given several broker URLs (a cluster's members): it connects through the first
 * member that answers, keeps reconciling and journaling with every member down (saying so once per
 * back-off, naming each member, no password), and refuses URLs that are not AMQP URLs, naming them.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { cli, ROOT, spawnJsonLines } from "../support/mod.ts";
import { declarationKey, type DeclarationMessage, EXCHANGE } from "../../lib/broker.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { declarationDigest } from "../../lib/declaration.ts";
import { createNodeAccount, deleteNodeAccount, setupTopology } from "../../control/broker_admin.ts";
import { BROKER_API_URL, BROKER_URL, uniqueNode } from "../control/support.ts";

import { signed, TEST_KEYS } from "../support/signing.ts";
const opts = { sanitizeResources: false, sanitizeOps: false };
const endpoints = { amqp: BROKER_URL, api: BROKER_API_URL };

async function declaration(node: string, path: string, content: string) {
  const text = JSON.stringify({
    version: 1,
    resources: [{ id: "f", type: "file", path, content, mode: "0644" }],
  });
  const message: DeclarationMessage = {
    kind: "declaration",
    node,
    generation: 1,
    digest: await declarationDigest(text),
    pushedAt: new Date().toISOString(),
    declaration: text,
  };
  return await signed(message);
}

async function runLink(
  args: string[],
  until: (reports: Record<string, unknown>[], stderr: string) => boolean,
) {
  const link = spawnJsonLines<Record<string, unknown>>([
    `${ROOT}systems/debian/main.ts`,
    "link",
    "--json",
    "--control-key",
    TEST_KEYS.controlKey,
    ...args,
  ]);
  const deadline = Date.now() + 60_000;
  while (
    !until(link.lines, link.stderr()) && link.exited() === undefined && Date.now() < deadline
  ) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const status = await link.kill();
  return { code: status.code, reports: link.lines, stderr: link.stderr() };
}

Deno.test("link with several brokers, all of them down", opts, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-brokers-" });
  const node = "all-down";
  try {
    await Deno.mkdir(`${dir}/state/link`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/state/link/declaration.json`,
      JSON.stringify(await declaration(node, `${dir}/f`, "kept\n")),
    );
    await Deno.writeTextFile(`${dir}/f`, "drifted\n");
    const run = await runLink(
      [
        "--broker",
        `amqp://${node}:secret-one@127.0.0.1:1/%2F`,
        "--broker",
        `amqp://${node}:secret-two@127.0.0.1:2/%2F`,
        "--state-dir",
        `${dir}/state`,
        "--every",
        "1s",
      ],
      (r, stderr) => r.length >= 4 && stderr.split("Cannot connect to any").length > 2,
    );
    // Reconciled meanwhile, as with one broker.
    assertEquals(await Deno.readTextFile(`${dir}/f`), "kept\n");
    assertEquals(run.reports[0]!.trigger, "start");
    assert(run.reports.slice(1).every((r) => r.trigger === "interval"));
    let journaled = 0;
    for await (const _ of Deno.readDir(`${dir}/state/link/outbox`)) journaled++;
    assertEquals(journaled, run.reports.length, "every report made is journaled");
    // Said once per back-off (2 s, then 4 s...), naming every member, never a password.
    const said = run.stderr.split("\n").filter((l) => l.includes("Cannot connect"));
    assert(said.length >= 2, run.stderr);
    for (const line of said) {
      assertMatch(
        line,
        /Cannot connect to any of the 2 brokers: Cannot connect to broker "amqp:\/\/all-down:\*\*\*@127\.0\.0\.1:1\/%2F": .*; Cannot connect to broker "amqp:\/\/all-down:\*\*\*@127\.0\.0\.1:2\/%2F": .*; retrying in \d+ s$/,
      );
    }
    assertEquals(
      said.map((l) => /retrying in (\d+) s/.exec(l)![1]).slice(0, 2),
      ["2", "4"],
    );
    assert(!run.stderr.includes("secret-"), "a password was printed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("link with several brokers: the first that answers is used", opts, async () => {
  await setupTopology(endpoints);
  const node = uniqueNode("two");
  const account = await createNodeAccount(endpoints, node);
  const dir = await Deno.makeTempDir({ prefix: "mesh-brokers-" });
  try {
    const session = await openBroker([`amqp://guest:guest@127.0.0.1:1/%2F`, BROKER_URL]);
    try {
      // The administrative session failed over too: member 2 of 2.
      assertEquals(session.member, 1);
      await publishConfirmed(session.channel, [{
        exchange: EXCHANGE,
        routingKey: declarationKey(node),
        body: new TextEncoder().encode(
          JSON.stringify(await declaration(node, `${dir}/f`, "pushed\n")),
        ),
      }]);
    } finally {
      await session.close();
    }
    const down = account.url.replace(/@127\.0\.0\.1:5672\//, "@127.0.0.1:1/");
    const run = await runLink(
      ["--broker", `${down},${account.url}`, "--state-dir", `${dir}/state`, "--every", "1h"],
      (r) => r.some((x) => x.trigger === "push"),
    );
    assertEquals(await Deno.readTextFile(`${dir}/f`), "pushed\n");
    assertMatch(run.stderr, /connected to amqp:\/\/[^:]+:\*\*\*@127\.0\.0\.1:5672\//);
  } finally {
    await deleteNodeAccount(endpoints, node).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("link: broker URLs that are not AMQP URLs are refused, each named", opts, async () => {
  const run = await cli("systems/debian/main.ts", [
    "link",
    "--broker",
    "amqp://n:pw@127.0.0.1:5672/%2F,http://n:pw@example.invalid/,not a url",
    "--state-dir",
    "/tmp/mesh-none",
  ]);
  assertEquals(run.code, 2);
  assertMatch(
    run.stderr,
    /--broker: Cannot use the broker URLs: broker 2 \("http:\/\/n:\*\*\*@example\.invalid\/"\) is not an amqp:\/\/ or amqps:\/\/ URL \(http:\); broker 3 \("not a url"\) is not a URL/,
  );
  assert(!run.stderr.includes(":pw@"), run.stderr);
});

Deno.test(
  "link: a broker that does not resolve or refuses is said, masked, and retried; the kept declaration still applies",
  opts,
  async () => {
    for (
      // A name that does not resolve over amqps:// (clear text to another machine is refused
      // before any lookup: lib/wire_trust.ts), a loopback port that refuses over amqp://.
      const [scheme, host, why] of [
        ["amqps", "broker.invalid:5671", /ENOTFOUND|resolve|lookup/i],
        ["amqp", "127.0.0.1:1", /ECONNREFUSED/],
      ] as const
    ) {
      const dir = await Deno.makeTempDir({ prefix: "mesh-brokers-" });
      const node = "lonely";
      try {
        await Deno.mkdir(`${dir}/state/link`, { recursive: true });
        await Deno.writeTextFile(
          `${dir}/state/link/declaration.json`,
          JSON.stringify(await declaration(node, `${dir}/f`, "kept\n")),
        );
        const url = `${scheme}://${node}:pass-word-9@${host}/%2F`;
        const run = await runLink(
          ["--broker", url, "--state-dir", `${dir}/state`, "--every", "1h"],
          (r, stderr) => r.length >= 1 && stderr.split("retrying in").length > 2,
        );
        // Still running when stopped (killed by the test, not exited on its own), and it applied.
        assertEquals(await Deno.readTextFile(`${dir}/f`), "kept\n");
        assertEquals(run.reports[0]!.trigger, "start");
        const said = run.stderr.split("\n").filter((l) => l.includes("Cannot connect"));
        assert(said.length >= 2, run.stderr);
        for (const line of said) {
          assert(
            line.startsWith(
              `mesh-host link: Cannot connect to broker "${scheme}://${node}:***@${host}/%2F": `,
            ),
            line,
          );
          assertMatch(line, why);
          assertMatch(line, /; retrying in \d+ s$/);
        }
        assert(!run.stderr.includes("pass-word-9"), "a password was printed");
        // Nothing lost: the kept declaration is where it was; never connected, so not "joined".
        assertEquals(
          JSON.parse(await Deno.readTextFile(`${dir}/state/link/declaration.json`)).generation,
          1,
        );
        assert(!(await Deno.lstat(`${dir}/state/joined`).then(() => true, () => false)));
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }
    // One that cannot be parsed is refused at start (exit 2), its credential masked.
    const bad = await cli("systems/debian/main.ts", [
      "link",
      "--broker",
      "amqp://lonely:pass-word-9@broker:99999/%2F",
      "--state-dir",
      "/tmp/mesh-none",
    ]);
    assertEquals(bad.code, 2, bad.stderr);
    assertMatch(bad.stderr, /broker 1 \("amqp:\/\/lonely:\*\*\*@broker:99999\/%2F"\) is not a URL/);
    assert(!bad.stderr.includes("pass-word-9"), bad.stderr);
  },
);

Deno.test(
  "link: with an interval of an hour, a connection the broker closes is made again at once, and the next push applies",
  opts,
  async () => {
    await setupTopology(endpoints);
    const node = uniqueNode("closed");
    const account = await createNodeAccount(endpoints, node);
    const dir = await Deno.makeTempDir({ prefix: "mesh-brokers-" });
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:15672${path}`, {
        ...init,
        headers: { authorization: `Basic ${btoa("guest:guest")}`, "x-reason": "test closes it" },
      });
    const link = spawnJsonLines<Record<string, unknown>>([
      `${ROOT}systems/debian/main.ts`,
      "link",
      "--json",
      "--control-key",
      TEST_KEYS.controlKey,
      "--broker",
      account.url,
      "--state-dir",
      `${dir}/state`,
      "--every",
      "1h",
    ]);
    const until = async (what: string, ok: () => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      while (!ok()) {
        if (link.exited() !== undefined || Date.now() > deadline) {
          throw new Error(`${what} within ${ms / 1000} s; the link said:\n${link.stderr()}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const connections = () => link.stderr().split("connected to ").length - 1;
    try {
      await until("no connection", () => connections() === 1, 30_000);
      // The broker's API lists a connection once its statistics are emitted (every few seconds).
      let name: string | undefined;
      for (let i = 0; i < 300 && name === undefined; i++) {
        const listed = await (await api("/api/connections")).json() as {
          name: string;
          user: string;
        }[];
        name = listed.find((c) => c.user === node)?.name;
        if (name === undefined) await new Promise((r) => setTimeout(r, 100));
      }
      assert(name !== undefined, "the broker does not list the link's connection");
      const closed = await api(`/api/connections/${encodeURIComponent(name)}`, {
        method: "DELETE",
      });
      await closed.body?.cancel();
      assertEquals(closed.status, 204);
      const at = Date.now();
      // Its retry is 2 s; the interval (an hour) is not waited for. The bound leaves a loaded
      // machine room past the 2 s.
      await until("not connected again", () => connections() === 2, 60_000);
      assertMatch(link.stderr(), /the broker closed the connection/);
      assert(Date.now() - at < 60_000);
      const session = await openBroker(BROKER_URL);
      try {
        await publishConfirmed(session.channel, [{
          exchange: EXCHANGE,
          routingKey: declarationKey(node),
          body: new TextEncoder().encode(
            JSON.stringify(await declaration(node, `${dir}/f`, "after the close\n")),
          ),
        }]);
      } finally {
        await session.close();
      }
      await until(
        "the push was not applied",
        () => link.lines.some((r) => r.trigger === "push"),
        15_000,
      );
      assertEquals(await Deno.readTextFile(`${dir}/f`), "after the close\n");
    } finally {
      await link.kill();
      await deleteNodeAccount(endpoints, node).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  },
);
