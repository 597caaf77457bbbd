/**
 * mesh-builder and the module catalogue against the real RabbitMQ, PostgreSQL, the lab's local
 * registry (Debian docker-registry on 127.0.0.1:5000), real git repositories with local bare
 * origins, and podman building from a local base image.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { ensureImage, IMAGE, type JsonLinesProcess, ROOT, spawnJsonLines } from "../support/mod.ts";
import { ensureRegistry, REGISTRY } from "../lab/mod.ts";
import {
  BROKER_API_URL,
  BROKER_URL,
  controlCli,
  freshInventory,
  type TestInventory,
  uniqueNode,
} from "../control/support.ts";
import { run } from "../../lib/command.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import {
  BUILD_QUEUE,
  BUILD_REQUEST_KEY,
  type BuildAnswer,
  buildReplyKey,
  buildReplyQueue,
  type BuildRequest,
  EXCHANGE,
} from "../../lib/broker.ts";
import { deleteBuilderAccount } from "../../control/broker_admin.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const endpoints = { amqp: BROKER_URL, api: BROKER_API_URL };
const PODMAN_ENV = {
  CONTAINERS_CONF: `${ROOT}containers.conf`,
  CONTAINERS_REGISTRIES_CONF: `${ROOT}tests/lab/registries.conf`,
};

/** A git repository with a bare origin whose default branch is main. */
class Source {
  constructor(readonly dir: string) {}
  get origin() {
    return `${this.dir}/origin.git`;
  }
  static async make(dir: string): Promise<Source> {
    const s = new Source(dir);
    await run(["git", "init", "-q", "--bare", "-b", "main", s.origin]);
    await run(["git", "init", "-q", "-b", "main", `${dir}/work`]);
    await run(["git", "-C", `${dir}/work`, "remote", "add", "origin", s.origin]);
    return s;
  }
  /** Commits `files` and pushes; returns the commit. */
  async commit(files: Record<string, string>, message: string): Promise<string> {
    for (const [name, content] of Object.entries(files)) {
      await Deno.writeTextFile(`${this.dir}/work/${name}`, content);
    }
    await run(["git", "-C", `${this.dir}/work`, "add", "-A"]);
    await run(["git", "-C", `${this.dir}/work`, "commit", "-q", "-m", message], {
      env: {
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@example.org",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@example.org",
      },
    });
    await run(["git", "-C", `${this.dir}/work`, "push", "-q", "origin", "main"]);
    return (await run(["git", "-C", `${this.dir}/work`, "rev-parse", "HEAD"])).stdout.trim();
  }
}

/** A running mesh-builder, printing each answer as JSON. */
interface Builder extends JsonLinesProcess<BuildAnswer> {
  /** Its account, `builder.NAME`. */
  name: string;
}

async function issueBuilder(inv: TestInventory, name: string): Promise<string> {
  const out = await controlCli(["builder", "issue", name], inv.env);
  assertEquals(out.code, 0, out.stderr);
  const url = out.stdout.split("\n").find((l) => l.startsWith("amqp://"));
  assert(url, out.stdout);
  return url;
}

function startBuilder(url: string, env: Record<string, string> = {}): Builder {
  const process = spawnJsonLines<BuildAnswer>([`${ROOT}builder/main.ts`, "--broker", url], {
    env: { ...PODMAN_ENV, ...env },
  });
  return Object.assign(process, { name: decodeURIComponent(new URL(url).username) });
}

async function waitFor<T>(what: string, probe: () => T | undefined, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function buildQueueDepth(): Promise<number> {
  const s = await openBroker(BROKER_URL);
  try {
    return (await s.channel.checkQueue(BUILD_QUEUE)).messageCount;
  } finally {
    await s.close();
  }
}

async function prepare() {
  await ensureRegistry();
  await ensureImage();
}

const containerfile = (extra = "") => `FROM ${IMAGE}\nCOPY hello /hello\n${extra}`;

/** What a builder test works in: a migrated inventory with the topology, a source, builders. */
interface BuildWorld {
  inv: TestInventory;
  dir: string;
  /** A git source with a bare origin (no commits yet). */
  source: Source;
  /** Issues a builder account `builder.NAME` and starts mesh-builder with it. */
  start(name: string, env?: Record<string, string>): Promise<Builder>;
}

/**
 * Runs `fn` in a fresh build world and removes all of it afterwards: builders stopped, their
 * accounts deleted, the inventory dropped, the source removed.
 */
async function withBuildWorld(fn: (world: BuildWorld) => Promise<void>): Promise<void> {
  await prepare();
  const inv = await freshInventory();
  const dir = await Deno.makeTempDir({ prefix: "mesh-build-" });
  const started: Builder[] = [];
  const names: string[] = [];
  try {
    assertEquals((await controlCli(["broker", "setup"], inv.env)).code, 0);
    const source = await Source.make(dir);
    await fn({
      inv,
      dir,
      source,
      start: async (name, env = {}) => {
        names.push(name);
        const builder = startBuilder(await issueBuilder(inv, name), env);
        started.push(builder);
        return builder;
      },
    });
  } finally {
    for (const b of started) await b.kill();
    for (const n of names) await deleteBuilderAccount(endpoints, n).catch(() => {});
    await inv.drop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test(
  "the whole path: asked, consumed, built, published, answered, recorded; behind; caught up",
  opts,
  async (t) => {
    await withBuildWorld(async ({ inv, dir, source, start }) => {
      const name = uniqueNode("b");
      await start(name);
      const first = await source.commit({ Containerfile: containerfile(), hello: "v1\n" }, "one");
      const module = `app-${name}`;
      const fragment = `${dir}/fragment.json`;
      await Deno.writeTextFile(fragment, JSON.stringify({ version: 1, resources: [] }));
      const env = { ...inv.env, MESH_ARTIFACT_STORE: REGISTRY };
      let firstImage = "";

      await t.step("module build: the builder builds it and the answer is recorded", async () => {
        const out = await controlCli(
          ["module", "build", module, "--source", source.origin, "--commit", first],
          env,
        );
        assertEquals(out.code, 0, out.stderr + out.stdout);
        assertMatch(
          out.stdout,
          new RegExp(`built ${module} at ${first.slice(0, 12)} by builder\\.${name}`),
        );
        const [row] = await inv.sql`select * from modules where name = ${module}`;
        assertEquals([row!.origin, row!.source_commit, row!.version], ["built", first, 1]);
        assertMatch(row!.image, new RegExp(`^${REGISTRY}/mesh/${module}@sha256:[0-9a-f]{64}$`));
        firstImage = row!.image;
        // The image really is in the store, under that digest.
        const digest = firstImage.split("@")[1]!;
        const manifest = await fetch(`http://${REGISTRY}/v2/mesh/${module}/manifests/${digest}`, {
          method: "HEAD",
          headers: {
            accept:
              "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
          },
        });
        assertEquals(manifest.status, 200);
        assertEquals(await buildQueueDepth(), 0);
      });

      await t.step("module list: current, built from its commit, running nowhere", async () => {
        const out = await controlCli(["module", "list", "--json"], env);
        assertEquals(out.code, 0, out.stderr);
        const entry = JSON.parse(out.stdout).modules.find((m: { name: string }) =>
          m.name === module
        );
        assertEquals(entry.behind.state, "current");
        assertEquals(entry.commit, first);
        assertEquals(entry.origin, "built");
        assertEquals(entry.nodes, []);
        const text = await controlCli(["module", "list"], env);
        assertMatch(
          text.stdout,
          new RegExp(`${module} v1 .* built from .* at ${first.slice(0, 12)}`),
        );
        // Shipped with the control plane: its own origin, nothing to be behind, not replaceable.
        const shipped = JSON.parse(out.stdout).modules.find((m: { name: string }) =>
          m.name === "mesh-host-state"
        );
        assertEquals([shipped.origin, shipped.behind.state], ["shipped", "no-source"]);
        assertMatch(text.stdout, /mesh-host-state v1 .* shipped with the control plane/);
        const over = await controlCli(
          ["module", "add", "--name", "mesh-host-state", fragment],
          env,
        );
        assertEquals(over.code, 2);
        assertMatch(over.stderr, /a shipped module of that name exists/);
      });

      const second = await source.commit({ hello: "v2\n" }, "two");

      await t.step("the source moves: the catalogue says behind", async () => {
        const out = await controlCli(["module", "list", "--json"], env);
        const entry = JSON.parse(out.stdout).modules.find((m: { name: string }) =>
          m.name === module
        );
        assertEquals(entry.behind.state, "behind");
        assertMatch(entry.behind.detail, new RegExp(`main is at ${second.slice(0, 12)}`));
        const text = await controlCli(["module", "list"], env);
        assertMatch(text.stdout, /behind: main is at/);
      });

      await t.step(
        "rebuilding catches up, with a new digest because the content changed",
        async () => {
          const out = await controlCli(
            ["module", "build", module, "--source", source.origin, "--commit", "main"],
            env,
          );
          assertEquals(out.code, 0, out.stderr + out.stdout);
          const [row] = await inv.sql`select * from modules where name = ${module}`;
          assertEquals([row!.source_commit, row!.version], [second, 2]);
          assert(row!.image !== firstImage, "the digest did not change");
          const list = await controlCli(["module", "list", "--json"], env);
          const entry = JSON.parse(list.stdout).modules.find((m: { name: string }) =>
            m.name === module
          );
          assertEquals(entry.behind.state, "current");
        },
      );

      await t.step("building the same commit again is not a new version", async () => {
        const out = await controlCli(
          ["module", "build", module, "--source", source.origin, "--commit", second],
          env,
        );
        assertEquals(out.code, 0, out.stderr + out.stdout);
        assertMatch(out.stdout, new RegExp(`module ${module} version 2 \\(unchanged\\)`));
        const [row] = await inv
          .sql`select version, source_commit from modules where name = ${module}`;
        assertEquals([row!.version, row!.source_commit], [2, second]);
      });
    });
  },
);

Deno.test(
  "a failed build is an answer with the reason, and the request is acknowledged",
  opts,
  async (t) => {
    await withBuildWorld(async ({ inv, dir, source, start }) => {
      const name = uniqueNode("bf");
      const builder = await start(name);
      const good = await source.commit({ Containerfile: containerfile(), hello: "v1\n" }, "one");
      const env = { ...inv.env, MESH_ARTIFACT_STORE: REGISTRY };
      const failing = async (args: string[], reason: RegExp, extraEnv = {}) => {
        const out = await controlCli(["module", "build", ...args], { ...env, ...extraEnv });
        assertEquals(out.code, 1, out.stderr + out.stdout);
        assertMatch(out.stdout, reason);
        const [row] = await inv
          .sql`select state, reason from builds order by requested_at desc limit 1`;
        assertEquals(row!.state, "failed");
        assertMatch(row!.reason, reason);
        assertEquals(await buildQueueDepth(), 0, "the request was not acknowledged");
      };
      await t.step("a commit that does not exist", async () => {
        await failing(
          ["m1", "--source", source.origin, "--commit", "0123456789abcdef0123456789abcdef01234567"],
          /commit "0123456789abcdef0123456789abcdef01234567" does not exist/,
        );
      });
      await t.step("a source that cannot be reached", async () => {
        await failing(
          ["m2", "--source", `${dir}/nowhere.git`, "--commit", good],
          /Cannot fetch source/,
        );
      });
      await t.step("a Containerfile that fails", async () => {
        const bad = await source.commit({ Containerfile: containerfile("RUN exit 3\n") }, "bad");
        await failing(
          ["m3", "--source", source.origin, "--commit", bad],
          /The build of m3 .* failed/,
        );
      });
      await t.step("a store that refuses the push", async () => {
        // A port where nothing serves a registry.
        await failing(
          ["m4", "--source", source.origin, "--commit", good, "--store", "127.0.0.1:1"],
          /The artifact store refused the push/,
        );
      });
      // After all of that the builder still answers: no redelivery loop.
      assertEquals(builder.lines.length, 4);
      assert(builder.lines.every((a) => a.outcome === "failed"));
    });
  },
);

/** Publishes a request by hand (as the administrative account) and waits for its answer. */
async function askByHand(
  request: BuildRequest,
  asker: string,
  others: BuildAnswer[] = [],
): Promise<BuildAnswer> {
  const s = await openBroker(BROKER_URL);
  try {
    const queue = buildReplyQueue(asker);
    await s.channel.assertQueue(queue, { durable: true });
    await s.channel.bindQueue(queue, EXCHANGE, buildReplyKey(asker));
    // Someone else's answer on the same key first: the asker must ignore it.
    for (const other of others) {
      await publishConfirmed(s.channel, [{
        exchange: EXCHANGE,
        routingKey: buildReplyKey(asker),
        body: new TextEncoder().encode(JSON.stringify(other)),
        options: { correlationId: other.id },
      }]);
    }
    await publishConfirmed(s.channel, [{
      exchange: EXCHANGE,
      routingKey: BUILD_REQUEST_KEY,
      body: new TextEncoder().encode(JSON.stringify(request)),
      options: { correlationId: request.id },
    }]);
    return await new Promise<BuildAnswer>((resolve) => {
      s.channel.consume(queue, (m) => {
        if (m === null) return;
        s.channel.ack(m);
        if (m.properties.correlationId === request.id) resolve(JSON.parse(m.content.toString()));
      });
    });
  } finally {
    await s.channel.deleteQueue(buildReplyQueue(asker)).catch(() => {});
    await s.close();
  }
}

Deno.test(
  "an artifact store binding with no address is refused, never replaced",
  opts,
  async () => {
    await withBuildWorld(async ({ inv, source, start }) => {
      // The builder's own variable names a working store: it must not be used.
      await start(uniqueNode("bs"), { MESH_ARTIFACT_STORE: REGISTRY });
      const good = await source.commit({ Containerfile: containerfile(), hello: "v1\n" }, "one");
      const asker = uniqueNode("ask");
      const request: BuildRequest = {
        kind: "build-request",
        id: crypto.randomUUID(),
        module: "nostore",
        source: source.origin,
        commit: good,
        artifactStore: { address: "" },
        replyTo: buildReplyKey(asker),
        requestedAt: new Date().toISOString(),
      };
      const answer = await askByHand(request, asker);
      assertEquals(answer.outcome, "failed");
      assertMatch(answer.reason!, /binding has no address; refused rather than falling back/);

      // With no binding at all (a request made by hand), the variable is used.
      const byHand = await askByHand({
        ...request,
        id: crypto.randomUUID(),
        artifactStore: undefined,
      }, asker);
      assertEquals(byHand.outcome, "built", byHand.reason);
      assertMatch(byHand.image!, new RegExp(`^${REGISTRY}/mesh/nostore@sha256:`));

      // And the control plane refuses to ask without an address.
      const out = await controlCli(
        ["module", "build", "x", "--source", source.origin, "--commit", good],
        { ...inv.env, MESH_ARTIFACT_STORE: "" },
      );
      assertEquals(out.code, 2);
      assertMatch(out.stderr, /binding has no address/);
    });
  },
);

Deno.test("the asker ignores answers that are not its own", opts, async () => {
  await withBuildWorld(async ({ inv, source, start }) => {
    await start(uniqueNode("bc"));
    const good = await source.commit({ Containerfile: containerfile(), hello: "v1\n" }, "one");
    // A stray answer waits on the asker's reply queue before it asks.
    const asker = uniqueNode("ask");
    const s = await openBroker(BROKER_URL);
    const queue = buildReplyQueue(asker);
    await s.channel.assertQueue(queue, { durable: true });
    await s.channel.bindQueue(queue, EXCHANGE, buildReplyKey(asker));
    const stray: BuildAnswer = {
      kind: "build-answer",
      id: crypto.randomUUID(),
      module: "stray",
      commit: good,
      outcome: "failed",
      reason: "a stray answer",
      builder: "nobody",
      startedAt: new Date().toISOString(),
      finishedAt: new Date().toISOString(),
    };
    await publishConfirmed(s.channel, [{
      exchange: EXCHANGE,
      routingKey: buildReplyKey(asker),
      body: new TextEncoder().encode(JSON.stringify(stray)),
      options: { correlationId: stray.id },
    }]);
    const out = await controlCli(
      ["module", "build", "real", "--source", source.origin, "--commit", good, "--asker", asker],
      { ...inv.env, MESH_ARTIFACT_STORE: REGISTRY },
    );
    await s.channel.deleteQueue(queue).catch(() => {});
    await s.close();
    assertEquals(out.code, 0, out.stderr + out.stdout);
    assertMatch(out.stdout, /built real/);
    assertMatch(out.stderr, /ignored an answer to a build this inventory is not waiting for/);
    assertEquals((await inv.sql`select 1 from modules where name = 'stray'`).length, 0);
  });
});

Deno.test(
  "a builder that dies mid-build leaves the request; another completes it",
  opts,
  async () => {
    await withBuildWorld(async ({ inv, source, start }) => {
      const names = [uniqueNode("k1"), uniqueNode("k2")];
      const slow = await source.commit(
        { Containerfile: containerfile("RUN sleep 6\n"), hello: "slow\n" },
        "slow",
      );
      const first = await start(names[0]!);
      await waitFor("the first builder to connect", () => /connected/.test(first.stderr()));
      const asking = controlCli(
        ["module", "build", "slow", "--source", source.origin, "--commit", slow],
        { ...inv.env, MESH_ARTIFACT_STORE: REGISTRY },
      );
      await waitFor("the first builder to be building", () => /: building /.test(first.stderr()));
      const second = await start(names[1]!);
      await waitFor("the second builder to connect", () => /connected/.test(second.stderr()));
      await first.kill("SIGKILL");
      const out = await asking;
      assertEquals(out.code, 0, out.stderr + out.stdout);
      assertMatch(
        out.stdout,
        new RegExp(`built slow at ${slow.slice(0, 12)} by builder\\.${names[1]}`),
      );
      assertEquals(second.lines.length, 1);
      assertEquals(await buildQueueDepth(), 0);
    });
  },
);

Deno.test(
  "builders share the queue: a busy builder holds one request, the idle one takes the next",
  opts,
  async () => {
    await withBuildWorld(async ({ inv, source, start }) => {
      const names = [uniqueNode("s1"), uniqueNode("s2")];
      const slow = await source.commit(
        { Containerfile: containerfile("RUN sleep 12\n"), hello: "slow\n" },
        "slow",
      );
      const quick = await source.commit({ Containerfile: containerfile(), hello: "q\n" }, "quick");
      const busy = await start(names[0]!);
      const idle = await start(names[1]!);
      const builders = [busy, idle];
      for (const b of builders) {
        await waitFor("the builders to connect", () => /connected/.test(b.stderr()));
      }
      const env = { ...inv.env, MESH_ARTIFACT_STORE: REGISTRY };
      const slowAsk = controlCli(
        ["module", "build", "slow", "--source", source.origin, "--commit", slow, "--asker", "a1"],
        env,
      );
      const taker = await waitFor(
        "a builder to take the slow request",
        () => builders.find((b) => /building slow/.test(b.stderr())),
      );
      const other = taker === busy ? idle : busy;
      const quickOut = await controlCli(
        ["module", "build", "quick", "--source", source.origin, "--commit", quick, "--asker", "a2"],
        env,
      );
      assertEquals(quickOut.code, 0, quickOut.stderr + quickOut.stdout);
      // The quick one was built by the other builder, while the first was still busy.
      assertMatch(quickOut.stdout, new RegExp(`by ${other.name.replace(".", "\\.")}`));
      // Round-robin alone would hand the next request to the busy builder, to wait behind its
      // build; prefetch 1 keeps it on the queue for the idle one.
      const again = await controlCli(
        [
          "module",
          "build",
          "quick2",
          "--source",
          source.origin,
          "--commit",
          quick,
          "--asker",
          "a2",
        ],
        env,
      );
      assertEquals(again.code, 0, again.stderr + again.stdout);
      assertMatch(again.stdout, new RegExp(`by ${other.name.replace(".", "\\.")}`));
      assertEquals(taker.lines.length, 0, "the busy builder answered before the quick builds");
      const slowOut = await slowAsk;
      assertEquals(slowOut.code, 0, slowOut.stderr + slowOut.stdout);
      assertMatch(slowOut.stdout, new RegExp(`by ${taker.name.replace(".", "\\.")}`));
    });
  },
);

Deno.test("module build refuses at once what no builder could take", opts, async (t) => {
  const inv = await freshInventory();
  const dir = await Deno.makeTempDir({ prefix: "mesh-build-" });
  try {
    assertEquals((await controlCli(["broker", "setup"], inv.env)).code, 0);
    await Deno.writeTextFile(`${dir}/web.json`, JSON.stringify({ version: 1, resources: [] }));
    assertEquals((await controlCli(["module", "add", `${dir}/web.json`], inv.env)).code, 0);
    const env = { ...inv.env, MESH_ARTIFACT_STORE: REGISTRY };
    // No builder runs: a request that went out would wait out the timeout instead.
    const refused = async (args: string[], reason: RegExp, extra: Record<string, string> = {}) => {
      const out = await controlCli(["module", "build", ...args, "--timeout", "60s"], {
        ...env,
        ...extra,
      });
      assertEquals(out.code, 2, out.stdout + out.stderr);
      assertMatch(out.stderr, reason);
      assertEquals((await inv.sql`select 1 from builds`).length, 0, "a build was recorded");
      return out;
    };
    await t.step("a commit no builder would accept", async () => {
      await refused(["x", "--source", `${dir}/src`, "--commit", "$(id)"], /commit: /);
    });
    await t.step("a source URL carrying a credential (never stored, never shown)", async () => {
      const out = await refused(
        ["x", "--source", "https://user:S3cretPW@127.0.0.1:9/x.git", "--commit", "main"],
        /carries a credential/,
      );
      assert(!out.stderr.includes("S3cretPW"), out.stderr);
    });
    await t.step("an artifact store that is not a registry address", async () => {
      await refused(["x", "--source", `${dir}/src`, "--commit", "main"], /is not an OCI registry/, {
        MESH_ARTIFACT_STORE: "http://127.0.0.1:5000",
      });
    });
    await t.step("a module added by hand is not replaced by a build", async () => {
      await refused(["web", "--source", `${dir}/src`, "--commit", "main"], /a handed-over module/);
    });
  } finally {
    await inv.drop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mesh-builder runs from its environment alone", opts, async () => {
  const inv = await freshInventory();
  const name = uniqueNode("be");
  let builder: JsonLinesProcess<BuildAnswer> | undefined;
  try {
    const url = await issueBuilder(inv, name);
    builder = spawnJsonLines<BuildAnswer>([`${ROOT}builder/main.ts`], {
      env: { ...PODMAN_ENV, MESH_BROKER_URL: url },
    });
    await waitFor("the builder to connect", () => /connected/.test(builder!.stderr()), 30_000);
    assert(!builder.stderr().includes(new URL(url).password), "the password was printed");
  } finally {
    await builder?.kill();
    await deleteBuilderAccount(endpoints, name).catch(() => {});
    await inv.drop();
  }
});

Deno.test("mesh-builder refuses at start, exit 2, without a broker or with one that is not an amqp URL", async () => {
  const builder = (args: string[], env: Record<string, string> = {}) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", `${ROOT}builder/main.ts`, ...args],
      env: { ...env, MESH_BROKER_URL: env.MESH_BROKER_URL ?? "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
  const none = await builder(["--name", "b"]);
  assertEquals(none.code, 2);
  assertMatch(
    new TextDecoder().decode(none.stderr),
    /mesh-builder: No broker given: pass --broker URL or set MESH_BROKER_URL/,
  );
  const bad = await builder(["--broker", "http://user:secret@example.invalid/"]);
  assertEquals(bad.code, 2);
  const said = new TextDecoder().decode(bad.stderr);
  assertMatch(said, /--broker: Cannot use the broker URLs: broker 1 \(.*\) is not an amqp:\/\//);
  assert(!said.includes("secret"), said);
});

Deno.test(
  "a builder that is a module publishes to its binding file's store, before the request's and the variable's",
  opts,
  async () => {
    await withBuildWorld(async ({ dir, source, start }) => {
      const bindings = `${dir}/bindings`;
      await Deno.mkdir(bindings);
      await Deno.writeTextFile(
        `${bindings}/artifact-store.json`,
        JSON.stringify({ name: "artifact-store", address: REGISTRY, module: "registry" }),
      );
      // The variable names a store where nothing listens: the binding must win over it.
      await start(uniqueNode("bb"), {
        MESH_BINDINGS_DIR: bindings,
        MESH_ARTIFACT_STORE: "127.0.0.1:1",
      });
      const good = await source.commit({ Containerfile: containerfile(), hello: "b\n" }, "one");
      const asker = uniqueNode("ask");
      const answer = await askByHand({
        kind: "build-request",
        id: crypto.randomUUID(),
        module: "boundstore",
        source: source.origin,
        commit: good,
        // And so must the request's own store.
        artifactStore: { address: "127.0.0.1:1" },
        replyTo: buildReplyKey(asker),
        requestedAt: new Date().toISOString(),
      }, asker);
      assertEquals(answer.outcome, "built", answer.reason);
      assertMatch(answer.image!, new RegExp(`^${REGISTRY}/mesh/boundstore@sha256:`));
    });
  },
);

Deno.test("a binding file that cannot be read or is malformed stops mesh-builder, exit 2, naming it", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-bindings-" });
  const path = `${dir}/artifact-store.json`;
  const builder = async (content: string | "directory") => {
    await Deno.remove(path, { recursive: true }).catch(() => {});
    if (content === "directory") await Deno.mkdir(path);
    else await Deno.writeTextFile(path, content);
    // A broker where nothing listens: the binding is read before any connection.
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        `${ROOT}builder/main.ts`,
        "--broker",
        "amqp://b:p@127.0.0.1:1/",
      ],
      env: { MESH_BINDINGS_DIR: dir, MESH_ARTIFACT_STORE: REGISTRY, MESH_BROKER_URL: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  };
  const said = (why: string) =>
    new RegExp(`^mesh-builder: Cannot read binding "${path.replaceAll("/", "\\/")}": ${why}`);
  try {
    await t.step("not JSON", async () => {
      const out = await builder("{ not json");
      assertEquals(out.code, 2, out.stderr);
      assertMatch(out.stderr, said("it is not JSON"));
    });
    await t.step("no address", async () => {
      const out = await builder(JSON.stringify({ name: "artifact-store", module: "registry" }));
      assertEquals(out.code, 2, out.stderr);
      assertMatch(out.stderr, said(`address: Missing required field "address"`));
    });
    await t.step("another provision's binding", async () => {
      const out = await builder(
        JSON.stringify({ name: "cache", address: "registry.lan:5000", module: "registry" }),
      );
      assertEquals(out.code, 2, out.stderr);
      assertMatch(out.stderr, said(`it binds provision "cache", not "artifact-store"`));
    });
    await t.step("an address that is not a store's", async () => {
      const out = await builder(
        JSON.stringify({ name: "artifact-store", address: "http://x/", module: "registry" }),
      );
      assertEquals(out.code, 2, out.stderr);
      assertMatch(out.stderr, said(`its address "http://x/" is not an artifact store address`));
    });
    await t.step("unreadable (a directory)", async () => {
      const out = await builder("directory");
      assertEquals(out.code, 2, out.stderr);
      assertMatch(out.stderr, said("it is a directory"));
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
