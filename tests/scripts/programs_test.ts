/**
 * `deno task programs` (scripts/build_programs.ts): mesh-reconcile, mesh-control and mesh-builder
 * as one file each, run as processes on this VM with the narrow permissions they are built with.
 * mesh-reconcile's stamp and watch units run it as a dynamic user, which cannot write the runtime
 * cache: their `ExecStartPre=+... --version` (as root) unpacks it, and the unprivileged run then
 * reads it.
 *
 * @tier whole (compiles mesh-reconcile, mesh-control and mesh-builder, 22 s of CPU in test:fast,
 * for what only a build changes)
 */

import { assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { freePort, ROOT } from "../support/mod.ts";
import { oneFileProgram } from "../support/onefile.ts";
import { makeTestPki } from "../support/tls.ts";
import { RECONCILE_PERMISSIONS } from "../../reconcile/permissions.ts";
import { CONTROL_PERMISSIONS } from "../../control/permissions.ts";
import { BUILDER_PERMISSIONS } from "../../builder/permissions.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

async function runFile(
  argv: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

/**
 * The permission flags on a one-file program's run line (its sh header, scripts/onefile.ts): the
 * flags between `$run_flags \` and the program, as `deno run` is given them.
 */
async function headerPermissions(file: string): Promise<string[]> {
  const f = await Deno.open(file);
  try {
    const head = new Uint8Array(16_384);
    const n = (await f.read(head)) ?? 0;
    const text = new TextDecoder("utf-8", { fatal: false }).decode(head.subarray(0, n));
    const line = /\$run_flags \\\n\s*(.*?) "\$program_dir\/main\.js" "\$@"/.exec(text)?.[1];
    if (line === undefined) throw new Error(`${file} has no run line in its header`);
    return line.split(" ");
  } finally {
    f.close();
  }
}

Deno.test("each one-file program carries the permissions declared beside its entry point", async () => {
  const declared = {
    reconcile: RECONCILE_PERMISSIONS,
    control: CONTROL_PERMISSIONS,
    builder: BUILDER_PERMISSIONS,
  } as const;
  for (const [program, permissions] of Object.entries(declared)) {
    const file = await oneFileProgram(program as keyof typeof declared);
    assertEquals(await headerPermissions(file), [...permissions], program);
  }
});

/** The nobody account's argv prefix (setpriv from util-linux), as a dynamic user would run. */
const AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"];

Deno.test("one-file mesh-reconcile: runs as a dynamic user from a cache root unpacked, as the shipped units do", async () => {
  const file = await oneFileProgram("reconcile");
  const dir = await Deno.makeTempDir();
  await Deno.chmod(dir, 0o755);
  const env = { MESH_RUNTIME_CACHE: `${dir}/cache` };
  try {
    // Before root unpacked it, an unprivileged run cannot, and says so (exit 3).
    const early = await runFile([...AS_NOBODY, file, "--version"], env);
    assertEquals(early.code, 3, early.stderr);
    assertStringIncludes(early.stderr, "MESH_RUNTIME_CACHE");
    // The units' ExecStartPre=+ (root).
    const version = await runFile([file, "--version"], env);
    assertEquals(version.code, 0, version.stderr);
    const expected = (await Deno.readTextFile(`${ROOT}lib/version.ts`)).match(
      /VERSION = "([^"]+)"/,
    )?.[1];
    assertEquals(version.stdout.trim(), expected);

    // The stamp unit's program, as nobody, serving a stamp it may read.
    await Deno.mkdir(`${dir}/stamp`, { mode: 0o755 });
    const port = freePort();
    const server = new Deno.Command(AS_NOBODY[0]!, {
      args: [
        ...AS_NOBODY.slice(1),
        file,
        "stamp",
        "serve",
        "--listen",
        `127.0.0.1:${port}`,
        "--stamp",
        `${dir}/stamp/stamp`,
      ],
      env,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      let answer: Response | undefined;
      for (let i = 0; i < 100 && answer === undefined; i++) {
        answer = await fetch(`http://127.0.0.1:${port}/stamp`).catch(() => undefined);
        if (answer === undefined) await new Promise((r) => setTimeout(r, 100));
      }
      if (answer === undefined) throw new Error("The one-file stamp server never answered");
      const body = await answer.json();
      assertEquals(body.state, "never", JSON.stringify(body));
    } finally {
      server.kill("SIGTERM");
      const status = await server.status;
      await server.stdout.cancel();
      await server.stderr.cancel();
      assertEquals(status.code, 0);
    }

    // Over HTTPS, with a certificate from the mesh CA and its key 0600, the serving account's
    // own (as a unit's credential is); the one-file watch verifies it against the CA (--ca).
    const pki = await makeTestPki(`${dir}/stamp`);
    await Deno.chown(pki.key, 65534, 65534);
    const tlsPort = freePort();
    const tlsServer = new Deno.Command(AS_NOBODY[0]!, {
      args: [...AS_NOBODY.slice(1), file, "stamp", "serve", "--listen", `127.0.0.1:${tlsPort}`]
        .concat(["--stamp", `${dir}/stamp/stamp`, "--cert", pki.cert, "--key", pki.key]),
      env,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      let watched: { code: number; stdout: string; stderr: string } | undefined;
      for (let i = 0; i < 100; i++) {
        watched = await runFile([
          file,
          "watch",
          `https://localhost:${tlsPort}/`,
          "--max-age",
          "1h",
          "--ca",
          pki.caCert,
        ], env);
        if (watched.code !== 6 || !watched.stdout.includes("cannot read")) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assertEquals(watched?.code, 3, `${watched?.stdout}${watched?.stderr}`);
      assertStringIncludes(watched!.stdout, ": new: ");
    } finally {
      tlsServer.kill("SIGTERM");
      const status = await tlsServer.status;
      await tlsServer.stdout.cancel();
      const said = decode(
        await new Response(tlsServer.stderr).arrayBuffer().then((b) => new Uint8Array(b)),
      );
      assertEquals(status.code, 0, said);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("one-file mesh-control applies its migrations, reads status and checks the broker with the permissions it is built with", async () => {
  const file = await oneFileProgram("control");
  const dir = await Deno.makeTempDir();
  const database = `mesh_programs_${crypto.randomUUID().slice(0, 8)}`;
  const admin = "postgres://postgres@127.0.0.1:5432/postgres";
  const psql = (sql: string) =>
    new Deno.Command("psql", { args: [admin, "-qc", sql], stdout: "null" }).output();
  await psql(`CREATE DATABASE ${database}`);
  const env = {
    MESH_RUNTIME_CACHE: `${dir}/cache`,
    MESH_DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
  };
  try {
    const migrate = await runFile([file, "migrate"], env);
    assertEquals(migrate.code, 0, migrate.stderr);
    assertMatch(migrate.stdout, /applied \d+ migrations: 0001_inventory/);
    const status = await runFile([file, "status"], env);
    assertEquals(status.code, 0, status.stderr);
    assertStringIncludes(status.stdout, "no nodes enrolled");
    // AMQP through the bundled client: amqplib is CommonJS, and a dynamic import of it by name
    // gave the code-split bundle only its default export ("connect is not a function").
    const broker = await runFile([file, "broker", "check"], {
      ...env,
      MESH_BROKER_URL: "amqp://guest:guest@127.0.0.1:5672/%2F",
      MESH_BROKER_API_URL: "http://guest:guest@127.0.0.1:15672",
    });
    assertEquals(broker.code, 0, broker.stderr);
    assertStringIncludes(broker.stdout, 'AMQP: authenticated as "guest"');
  } finally {
    await psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("one-file mesh-builder checks what it needs at its start", async () => {
  const file = await oneFileProgram("builder");
  const dir = await Deno.makeTempDir();
  try {
    const refused = await runFile([
      file,
      "--broker",
      "amqp://b:p@127.0.0.1:1/%2F",
      "--work-dir",
      `${dir}/missing`,
    ], { MESH_RUNTIME_CACHE: `${dir}/cache` });
    assertEquals(refused.code, 2, refused.stderr);
    assertStringIncludes(refused.stderr, `${dir}/missing`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
