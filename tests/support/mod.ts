/**
 * Test support: real components started for a test and stopped after it. Podman containers
 * from a local busybox image (nothing can be pulled here), Caddy on free ports with its admin
 * API, listening sockets, certificates made with openssl, and the CLI run as a subprocess.
 *
 * @module
 */

import { run } from "../../lib/command.ts";

/** The repository root. */
export const ROOT = new URL("../../", import.meta.url).pathname;

// Podman on these VMs needs the project's containers.conf (runc, no default ulimits).
Deno.env.set("CONTAINERS_CONF", `${ROOT}containers.conf`);
// ...and to be told that the lab registry on 127.0.0.1:5000 is plain HTTP.
Deno.env.set("CONTAINERS_REGISTRIES_CONF", `${ROOT}tests/lab/registries.conf`);

/** The tiny image every test container runs, built from Debian's busybox-static. */
export const IMAGE = "localhost/mesh-busybox:latest";

/** Label put on every container a test starts, so leftovers can be found and removed. */
export const TEST_LABEL = "mesh.test=1";

/** Builds {@linkcode IMAGE} with `podman import` from `/bin/busybox` when it is not there. */
export async function ensureImage(): Promise<void> {
  const exists = await run(["podman", "image", "exists", IMAGE], { allowFailure: true });
  if (exists.code === 0) return;
  const dir = await Deno.makeTempDir({ prefix: "mesh-image-" });
  try {
    await Deno.mkdir(`${dir}/root/bin`, { recursive: true });
    await Deno.mkdir(`${dir}/root/tmp`, { recursive: true });
    await Deno.copyFile("/bin/busybox", `${dir}/root/bin/busybox`);
    await Deno.chmod(`${dir}/root/bin/busybox`, 0o755);
    for (const applet of ["sh", "sleep", "httpd", "nc", "true", "cat", "echo"]) {
      await Deno.symlink("busybox", `${dir}/root/bin/${applet}`);
    }
    await run(["tar", "-C", `${dir}/root`, "-cf", `${dir}/rootfs.tar`, "."]);
    await run(["podman", "import", "--change", 'CMD ["/bin/sh"]', `${dir}/rootfs.tar`, IMAGE]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A unique name for a test's container or entry. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Starts a busybox container running `httpd` (or `sleep`), optionally publishing ports. */
export async function startContainer(
  name: string,
  options: { publish?: { host: number; container: number }[]; labels?: Record<string, string> } =
    {},
): Promise<void> {
  await ensureImage();
  const argv = ["podman", "run", "-d", "--name", name, "--label", TEST_LABEL];
  for (const [k, v] of Object.entries(options.labels ?? {})) argv.push("--label", `${k}=${v}`);
  for (const p of options.publish ?? []) argv.push("-p", `127.0.0.1:${p.host}:${p.container}`);
  argv.push(
    IMAGE,
    ...(options.publish?.length
      ? ["httpd", "-f", "-p", String(options.publish[0]!.container)]
      : ["sleep", "3600"]),
  );
  await run(argv);
}

/** Removes a container, running or not; a container already gone is fine. */
export async function removeContainer(name: string): Promise<void> {
  await run(["podman", "rm", "-f", "-t", "0", name], { allowFailure: true });
}

/**
 * Where {@linkcode freePort} draws from: below Linux's ephemeral range (32768-60999 by default,
 * /proc/sys/net/ipv4/ip_local_port_range), which the kernel hands out for `port: 0` and for every
 * outgoing connection. A port drawn from that range and released could be taken, before the test
 * binds it, by any connect of the test processes running beside it (broker, PostgreSQL, HTTP).
 */
export const FREE_PORTS = { from: 20_000, to: 32_767 } as const;

/**
 * A free TCP port on the loopback address, drawn at random from `range` ({@linkcode FREE_PORTS})
 * and bound on both 127.0.0.1 and every address to be sure it is free (then released); one in use
 * is skipped (RabbitMQ's inter-node port 25672 is in the range, say).
 *
 * @throws {Error} when 1,000 draws find none free.
 */
export function freePort(range: { from: number; to: number } = FREE_PORTS): number {
  for (let i = 0; i < 1_000; i++) {
    const port = range.from + Math.floor(Math.random() * (range.to - range.from + 1));
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      Deno.listen({ hostname: "0.0.0.0", port }).close();
      return port;
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  throw new Error(
    `Cannot find a free port: 1,000 draws from ${range.from}-${range.to} were in use`,
  );
}

/** A running Caddy with its own admin API and ports, and a temporary home. */
export interface CaddyFixture {
  /** Admin API address, e.g. `localhost:41234`. */
  admin: string;
  httpsPort: number;
  httpPort: number;
  dir: string;
  stop(): Promise<void>;
}

/**
 * Starts Caddy with the given site blocks (Caddyfile syntax) under a global block that sets
 * the admin address, ports, `local_certs` and a private storage, and waits until its admin API
 * answers with the config loaded.
 */
export async function startCaddy(
  sites: (ports: { https: number; http: number }) => string,
): Promise<CaddyFixture> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-caddy-" });
  const adminPort = freePort();
  const httpsPort = freePort();
  const httpPort = freePort();
  const caddyfile = `{
\tadmin localhost:${adminPort}
\tlocal_certs
\tskip_install_trust
\thttp_port ${httpPort}
\thttps_port ${httpsPort}
\tstorage file_system ${dir}/data
\tservers {
\t\tprotocols h1 h2
\t}
}
${sites({ https: httpsPort, http: httpPort })}
`;
  await Deno.writeTextFile(`${dir}/Caddyfile`, caddyfile);
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      'exec caddy run --config "$1/Caddyfile" --adapter caddyfile >"$1/caddy.log" 2>&1',
      "sh",
      dir,
    ],
    env: { HOME: dir, XDG_DATA_HOME: `${dir}/xdg`, XDG_CONFIG_HOME: `${dir}/xdg` },
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const admin = `localhost:${adminPort}`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  // Up to 30 s (was 100 tries 100 ms apart): a loaded machine may take longer to start Caddy.
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`http://${admin}/config/`);
      const body = await r.text();
      if (r.ok && body.includes('"http"')) {
        return { admin, httpsPort, httpPort, dir, stop };
      }
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  const text = await Deno.readTextFile(`${dir}/caddy.log`).catch(() => "");
  await stop();
  throw new Error(`Caddy did not start: ${text.slice(-2000)}`);
}

/** Writes a certificate and key for `name`, valid from `notBefore` to `notAfter` (openssl). */
export async function makeCertificate(
  dir: string,
  file: string,
  options: { name: string; notBefore: Date; notAfter: Date },
): Promise<{ cert: string; key: string }> {
  const stamp = (d: Date) => d.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  const work = `${dir}/${file}-ca`;
  await Deno.mkdir(`${work}/new`, { recursive: true });
  await Deno.writeTextFile(`${work}/index.txt`, "");
  await Deno.writeTextFile(`${work}/serial`, "1000\n");
  await Deno.writeTextFile(
    `${work}/openssl.cnf`,
    `[ca]\ndefault_ca = own\n[own]\ndir = ${work}\ndatabase = $dir/index.txt\nserial = $dir/serial\nnew_certs_dir = $dir/new\ndefault_md = sha256\npolicy = any\ncopy_extensions = copy\nunique_subject = no\n[any]\ncommonName = supplied\n[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = ${options.name}\n[ext]\nsubjectAltName = DNS:${options.name}\nbasicConstraints = CA:FALSE\n`,
  );
  const key = `${dir}/${file}.key`;
  const cert = `${dir}/${file}.crt`;
  await run([
    "openssl",
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    key,
    "-out",
    `${work}/req.csr`,
    "-config",
    `${work}/openssl.cnf`,
  ]);
  await run([
    "openssl",
    "ca",
    "-batch",
    "-selfsign",
    "-config",
    `${work}/openssl.cnf`,
    "-keyfile",
    key,
    "-in",
    `${work}/req.csr`,
    "-out",
    cert,
    "-startdate",
    stamp(options.notBefore),
    "-enddate",
    stamp(options.notAfter),
    "-extfile",
    `${work}/openssl.cnf`,
    "-extensions",
    "ext",
  ]);
  return { cert, key };
}

/** The outcome of running a CLI module. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `deno run -A <module> ...args` from the repository root. */
export async function cli(
  module: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  return await denoRun([`${ROOT}${module}`, ...args], { env, cwd: ROOT });
}

/**
 * Runs `deno run -A --quiet [--config deno.json] <args>` to completion. The project's
 * deno.json is named when `cwd` is outside the checkout, so its imports resolve.
 */
export async function denoRun(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<CliResult> {
  const cwd = options.cwd ?? ROOT;
  const config = cwd.startsWith(ROOT) ? [] : ["--config", `${ROOT}deno.json`];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", ...config, ...args],
    env: options.env ?? {},
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** Runs `mesh-reconcile`. */
export function reconcileCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return cli("reconcile/main.ts", args, env);
}

/** A directory holding a fake program named `name` that prints `stderr` and exits `code`. */
export async function fakeProgram(name: string, code: number, stderr: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: `mesh-fake-${name}-` });
  await Deno.writeTextFile(
    `${dir}/${name}`,
    `#!/bin/sh\necho '${stderr.replaceAll("'", "")}' >&2\nexit ${code}\n`,
  );
  await Deno.chmod(`${dir}/${name}`, 0o755);
  return dir;
}

/** The account the rootless tests use. */
export const ROOTLESS_ACCOUNT = "meshrootless";

/**
 * Creates {@linkcode ROOTLESS_ACCOUNT} (with subordinate ids and a runtime directory) when it is
 * missing and imports the busybox image into its own podman storage. Returns a function that
 * runs podman as that account.
 */
export async function ensureRootlessAccount(): Promise<(args: string[]) => Promise<string>> {
  const id = await run(["id", "-u", ROOTLESS_ACCOUNT], { allowFailure: true });
  if (id.code !== 0) {
    await run(["useradd", "--create-home", "--shell", "/bin/sh", ROOTLESS_ACCOUNT]);
  }
  const uid = (await run(["id", "-u", ROOTLESS_ACCOUNT])).stdout.trim();
  const runtimeDir = `/run/user/${uid}`;
  await Deno.mkdir(runtimeDir, { recursive: true, mode: 0o700 });
  await run(["chown", ROOTLESS_ACCOUNT, runtimeDir]);
  const podman = async (args: string[]) =>
    (await run([
      "runuser",
      "-u",
      ROOTLESS_ACCOUNT,
      "--",
      "env",
      `HOME=/home/${ROOTLESS_ACCOUNT}`,
      `XDG_RUNTIME_DIR=${runtimeDir}`,
      `CONTAINERS_CONF=${ROOT}containers.conf`,
      "podman",
      ...args,
    ], { cwd: "/tmp" })).stdout;
  const has = await run([
    "runuser",
    "-u",
    ROOTLESS_ACCOUNT,
    "--",
    "env",
    `HOME=/home/${ROOTLESS_ACCOUNT}`,
    `XDG_RUNTIME_DIR=${runtimeDir}`,
    "podman",
    "image",
    "exists",
    IMAGE,
  ], { allowFailure: true, cwd: "/tmp" });
  if (has.code !== 0) {
    await ensureImage();
    const tar = await Deno.makeTempFile({ suffix: ".tar" });
    try {
      await run(["podman", "save", "--format", "oci-archive", "-o", tar, IMAGE]);
      await Deno.chmod(tar, 0o644);
      await podman(["load", "-i", tar]);
    } finally {
      await Deno.remove(tar);
    }
  }
  return podman;
}

/**
 * The root certificate of a running Caddy's internal CA (`local_certs`), the PEM file a registry
 * names in `roots` for the chains Caddy serves to be trusted. Waits (up to 30 s) for Caddy to
 * have written it: it makes its CA with the first certificate it issues, after its config loads.
 */
export async function caddyRoot(caddy: CaddyFixture): Promise<string> {
  const path = `${caddy.dir}/data/pki/authorities/local/root.crt`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await Deno.stat(path)).size > 0) return path;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Caddy wrote no root certificate at ${path} within 30 s`);
}

/** Replaces a running Caddy's config with new site blocks through its admin API (`POST /load`). */
export async function reloadCaddy(
  caddy: CaddyFixture,
  sites: (ports: { https: number; http: number }) => string,
): Promise<void> {
  const text = await Deno.readTextFile(`${caddy.dir}/Caddyfile`);
  const global = text.slice(0, text.indexOf("\n}\n") + 3);
  const body = `${global}${sites({ https: caddy.httpsPort, http: caddy.httpPort })}\n`;
  const r = await fetch(`http://${caddy.admin}/load`, {
    method: "POST",
    headers: { "content-type": "text/caddyfile" },
    body,
  });
  const answer = await r.text();
  if (!r.ok) throw new Error(`Caddy refused the config: ${r.status} ${answer}`);
}

/** A Deno program running in the background that prints one JSON object per stdout line. */
export interface JsonLinesProcess<T> {
  /** Each stdout line, parsed, as it arrives. */
  lines: T[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /** The exit status, once it has exited. */
  exited(): Deno.CommandStatus | undefined;
  /** The process id (its `/proc/PID/status` says its memory). */
  pid: number;
  /** Sends `signal` (default SIGTERM) unless already sent, and waits for the exit. */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/**
 * Starts `deno run -A --quiet <args>` in the checkout and collects its JSON lines and stderr (the
 * link, the builder: long-running programs whose results the tests read as they come).
 */
export function spawnJsonLines<T>(
  args: string[],
  options: { env?: Record<string, string> } = {},
): JsonLinesProcess<T> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", ...args],
    cwd: ROOT,
    env: options.env ?? {},
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: T[] = [];
  let err = "";
  let status: Deno.CommandStatus | undefined;
  let killed: Promise<Deno.CommandStatus> | undefined;
  const reading = (async () => {
    let buffer = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      let i;
      while ((i = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        if (line.trim()) lines.push(JSON.parse(line));
      }
    }
  })();
  const readingErr = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) err += chunk;
  })();
  const done = child.status.then(async (s) => {
    await reading;
    await readingErr;
    status = s;
    return s;
  });
  return {
    lines,
    stderr: () => err,
    exited: () => status,
    pid: child.pid,
    kill(signal: Deno.Signal = "SIGTERM") {
      if (killed === undefined) {
        try {
          child.kill(signal);
        } catch { /* already gone */ }
        killed = done;
      }
      return killed;
    },
  };
}
