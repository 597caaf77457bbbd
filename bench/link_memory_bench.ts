/**
 * The link's resident memory over many interval applies (its figures: bench/README.md, the
 * standing table).
 *
 * Run from the repository root: `deno run -A bench/link_memory_bench.ts [--applies N]
 * [--v8-flags FLAGS] [--every-apply] [--no-link-flags] [--onefile] [--speed X] [--oversized K]`. It makes a private vhost on the real broker (127.0.0.1:5672, management on
 * 15672, account guest), sets up the topology there, enrolls a throwaway node, publishes a
 * declaration of 100 directories and 1,000 files (under a temp dir) to the node's queue as the
 * control plane would, and runs the link's loop (`runLink` of host/link.ts, the code `mesh-host
 * link` runs, without the carried bundle) in a child process, with the V8 flags the built hosts
 * run with unless `--v8-flags` says otherwise (`""`: none), and with the flags a built host adds
 * for `link` (`HOST_COMMAND_FLAGS`: no code cache, `gc` exposed; `--no-link-flags`: without them,
 * as before session 8). `--onefile` builds the child as a one-file
 * executable and starts it as `FILE link ARGS`, through the header a node runs. The link runs with `--every 1s` on a
 * clock 50 times faster (see `child`), so it applies about once a second. The child reads its
 * own `VmRSS` and `VmHWM` from `/proc/self/status` after the 1st (the converge), 2nd, 10th, 50th,
 * 100th, ... apply (`--every-apply`: after each, and the medians from the 10th on are printed),
 * with its CPU time (user + system) so far, checks every report (`applied`, 1,100 of 1,100; after the first, nothing
 * changed), and stops after `--applies` (default 1,000). `--oversized K`: after every K-th apply
 * the bench publishes a declaration message of 100 MB (the size seen in the field) to the node's queue,
 * one at a time; the link must refuse each from its header (`more than the 67108864 it may be
 * (not read)`, any other report fails the run), the child samples right after each refusal and
 * after every K-th apply, and the summary gives the resident memory after each refusal and over
 * the applies that follow (docs/design.md, "Refusing costs nothing").
 *
 * Everything is removed in a `finally` (the vhost with its queues, the node's account, the temp
 * dir), also on failure and on Ctrl-C. The table goes to stdout and, with the raw samples, to
 * `bench/out/link-memory-<time>.{md,json}`.
 *
 * @module
 */

import type { DeclarationMessage } from "../lib/broker.ts";
import { DIRS, FILES_PER_DIR, type Sample, SPEED } from "./link_memory_child.ts";
import {
  buildCacheDir,
  buildOneFile,
  bundleProgram,
  fetchRuntime,
  type OneFileArch,
} from "../scripts/onefile.ts";
import { HOST_COMMAND_FLAGS, HOST_V8_FLAGS } from "../scripts/host_flags.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const OUT_DIR = `${ROOT}bench/out`;
const API = "http://127.0.0.1:15672";
const ADMIN = { user: "guest", password: "guest" };
const MiB = 1024 * 1024;
/** The V8 flags a built host runs with (`--v8-flags=` taken off). */
const HOST_V8 = HOST_V8_FLAGS.map((f) => f.replace(/^--v8-flags=/, ""));
function log(line: string) {
  console.error(`link_memory_bench: ${line}`);
}

async function api(method: string, path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${API}${path}`, {
    method,
    headers: {
      authorization: `Basic ${btoa(`${ADMIN.user}:${ADMIN.password}`)}`,
      "content-type": "application/json",
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  await response.body?.cancel();
  if (!response.ok && !(method === "DELETE" && response.status === 404)) {
    throw new Error(`${method} ${path}: HTTP ${response.status}`);
  }
}

function declarationOf(tree: string): string {
  const resources: unknown[] = [];
  for (let d = 1; d <= DIRS; d++) {
    const dir = `d${String(d).padStart(3, "0")}`;
    resources.push({ id: dir, type: "directory", path: `${tree}/${dir}`, mode: "0755" });
    for (let f = 1; f <= FILES_PER_DIR; f++) {
      const name = `f${String(f).padStart(2, "0")}.conf`;
      const lines = Array.from(
        { length: 4 + ((d * 7 + f) % 5) },
        (_, k) => `key_${k} = value-${(d * 1000 + f * 10 + k).toString(16)}\n`,
      );
      resources.push({
        id: `${dir}-${name}`,
        type: "file",
        path: `${tree}/${dir}/${name}`,
        content: `# ${dir}/${name}\n${lines.join("")}`,
        mode: "0644",
      });
    }
  }
  return JSON.stringify({ version: 1, resources });
}

interface Options {
  applies: number;
  /** Run the child from its TypeScript sources rather than bundled as the built host runs. */
  source: boolean;
  /** Given to the link's process as `--v8-flags=...` (`--expose-gc`: collect before sampling). */
  v8Flags: string[];
  /** Sample after every apply (else after the 1st, 2nd, 10th, 50th, 100th, ...). */
  everyApply: boolean;
  /**
   * Start the link without the `deno run` flags a built host adds for `link` (`HOST_COMMAND_FLAGS`
   * of scripts/host_flags.ts), as built hosts did before session 8 (`--no-link-flags`).
   */
  noLinkFlags: boolean;
  /**
   * Build the child as a one-file executable (scripts/onefile.ts, the host's V8 flags and
   * command flags; all permissions, for its own `/proc/self`) and start it as `FILE link ARGS`, through the header's run line,
   * rather than `deno run -A` on its bundle.
   */
  onefile: boolean;
  /**
   * How much faster the link's clock runs (`--speed`, default {@linkcode SPEED}: applies back to
   * back); below 1 the link waits that much longer than its 1 s interval between applies (0.1:
   * 10 s, to see what V8 and malloc give back while it is idle).
   */
  speed: number;
  /**
   * Publish a 100 MB declaration message (over the link's bound, refused from its header) after
   * every this many applies (`--oversized K`; 0: never), to see what refusing it costs.
   */
  oversized: number;
}

/** The oversized message's declaration's one file, in bytes (the field's message: 100 MB). */
const OVERSIZED_BYTES = 100e6;

/**
 * A declaration message of one file of {@linkcode OVERSIZED_BYTES} to `node`, its bytes written
 * directly (`JSON.stringify` of such a text takes seconds); the link refuses it from its header.
 */
function oversizedMessage(node: string): Uint8Array {
  const head = new TextEncoder().encode(JSON.stringify({
    kind: "declaration",
    node,
    generation: 1_000_000,
    digest: `sha256:${"0".repeat(64)}`,
    pushedAt: new Date().toISOString(),
    declaration: "@",
  }));
  const at = head.indexOf("@".charCodeAt(0));
  const body = new Uint8Array(head.length - 1 + OVERSIZED_BYTES);
  body.set(head.subarray(0, at));
  body.fill("x".charCodeAt(0), at, at + OVERSIZED_BYTES);
  body.set(head.subarray(at + 1), at + OVERSIZED_BYTES);
  return body;
}

async function parent(options: Options) {
  // Loaded here, not at the top: the child (this same file) must load only what the link loads
  // (amqplib, which the control plane's side uses, would add Deno's Node layer to its figures).
  const { declarationKey, EXCHANGE } = await import("../lib/broker.ts");
  const { openBroker, publishConfirmed } = await import("../lib/amqp.ts");
  const { MAX_DECLARATION_MESSAGE_BYTES } = await import("../lib/broker_names.ts");
  const { declarationDigest } = await import("../lib/declaration.ts");
  const { createNodeAccount, deleteNodeAccount, setupTopology } = await import(
    "../control/broker_admin.ts"
  );
  const dir = await Deno.makeTempDir({ prefix: "mesh-link-memory-" });
  const vhost = `meshbench-link-${crypto.randomUUID().slice(0, 8)}`;
  const endpoints = {
    amqp: `amqp://${ADMIN.user}:${ADMIN.password}@127.0.0.1:5672/${vhost}`,
    api: `http://${ADMIN.user}:${ADMIN.password}@127.0.0.1:15672`,
  };
  const node = `memory-${crypto.randomUUID().slice(0, 8)}`;
  let link: Deno.ChildProcess | undefined;
  const onSignal = () => {
    log("interrupted; stopping and cleaning up");
    try {
      link?.kill("SIGTERM");
    } catch { /* gone */ }
  };
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    await api("PUT", `/api/vhosts/${encodeURIComponent(vhost)}`, {});
    await api("PUT", `/api/permissions/${encodeURIComponent(vhost)}/${ADMIN.user}`, {
      configure: ".*",
      write: ".*",
      read: ".*",
    });
    await setupTopology(endpoints);
    const account = await createNodeAccount(endpoints, node);
    const text = declarationOf(`${dir}/tree`);
    // Signed as the control plane signs it, by a key of the bench's own.
    const { generateSigningKey, signDeclaration } = await import("../lib/signing.ts");
    const made = await generateSigningKey();
    await Deno.writeTextFile(`${dir}/control.pub`, made.publicPem, { mode: 0o644 });
    const fields = {
      node,
      generation: 1,
      digest: await declarationDigest(text),
      pushedAt: new Date().toISOString(),
    };
    const message: DeclarationMessage = {
      kind: "declaration",
      ...fields,
      declaration: text,
      ...await signDeclaration(made.key, fields),
    };
    const session = await openBroker(endpoints.amqp);
    try {
      await publishConfirmed(session.channel, [{
        exchange: EXCHANGE,
        routingKey: declarationKey(node),
        body: new TextEncoder().encode(JSON.stringify(message)),
      }]);
    } finally {
      await session.close();
    }
    log(
      `vhost ${vhost}, node ${node}: ${DIRS + DIRS * FILES_PER_DIR} resources (${
        (text.length / 1024).toFixed(0)
      } KiB); ${options.applies} applies`,
    );
    const childArgs = JSON.stringify({
      broker: account.url,
      node,
      stateDir: `${dir}/state`,
      controlKey: `${dir}/control.pub`,
      applies: options.applies,
      everyApply: options.everyApply,
      speed: options.speed,
      oversizedEvery: options.oversized,
      // The link collects after each apply (host/link.ts, `collect`) when `gc` is exposed; the
      // child collects again before sampling only when asked to (`--v8-flags ...,--expose-gc`).
      gc: options.v8Flags.some((f) => f.includes("--expose-gc")),
    });
    const v8 = options.v8Flags.map((f) => `--v8-flags=${f}`);
    let command: string;
    let args: string[];
    let env: Record<string, string> = {};
    if (options.onefile) {
      // As a node runs it: the one-file header unpacks the runtime and the split program into
      // its cache and execs `deno run` with the host's permissions and flags, and the flags it
      // adds for `link`.
      const arch = Deno.build.arch as OneFileArch;
      const file = await buildOneFile(`${ROOT}bench/link_memory_child.ts`, `${dir}/link-child`, {
        name: `mesh-link-memory-child-${arch}`,
        runtime: await fetchRuntime(arch, buildCacheDir()),
        // All, not the host's: the child reads its own /proc/self/status, which Deno allows
        // only with every permission.
        permissions: ["--allow-all", ...v8],
        commandFlags: options.noLinkFlags ? {} : HOST_COMMAND_FLAGS,
        config: `${ROOT}deno.json`,
      });
      command = file.path;
      args = ["link"];
      env = { MESH_RUNTIME_CACHE: `${dir}/runtime-cache` };
    } else {
      command = Deno.execPath();
      args = ["run", "-A", ...(options.noLinkFlags ? [] : HOST_COMMAND_FLAGS.link ?? []), ...v8];
      let program = `${ROOT}bench/link_memory_child.ts`;
      // The built host runs its program bundled as scripts/onefile.ts bundles it (split, its
      // `require` helper lazy: bundleProgram): so does the child, unless --source (a module
      // graph of TypeScript sources, transpiled from Deno's cache, which keeps more of Deno's
      // own code resident).
      if (!options.source) {
        program = (await bundleProgram(program, `${dir}/child`, {
          config: `${ROOT}deno.json`,
        })).dir + "/main.js";
      }
      args.push(program);
    }
    if (!options.source) {
      // The host's program is unpacked once to a path of its own and started from there again
      // and again: Deno's code cache (in DENO_DIR) serves every start but the first. So started
      // once here, loading and exiting, before the measured run.
      const warm = await new Deno.Command(command, {
        args: [...args, "--warm"],
        env,
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      if (!warm.success) throw new Error("Cannot start the link's bundled child");
    }
    link = new Deno.Command(command, {
      args: [...args, childArgs],
      env,
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const samples: Sample[] = [];
    // --oversized K: a message of OVERSIZED_BYTES (as the field's: a declaration of one file of
    // 100 MB), published after every K-th apply's sample, one at a time; the child samples after
    // each refusal too (`refusals`).
    let oversized: Uint8Array | undefined;
    let publishing: Promise<void> | undefined;
    let published = 0;
    const publishOversized = () => {
      oversized ??= oversizedMessage(node);
      if (oversized.length <= MAX_DECLARATION_MESSAGE_BYTES) throw new Error("not oversized");
      publishing = (async () => {
        const s = await openBroker(endpoints.amqp);
        try {
          await publishConfirmed(s.channel, [{
            exchange: EXCHANGE,
            routingKey: declarationKey(node),
            body: oversized!,
            options: { persistent: false },
          }]);
          published++;
        } finally {
          await s.close();
        }
      })().finally(() => publishing = undefined);
    };
    let rest = "";
    for await (const chunk of link.stdout.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      let i;
      while ((i = rest.indexOf("\n")) >= 0) {
        const line = rest.slice(0, i);
        rest = rest.slice(i + 1);
        // V8's own lines (`--v8-flags=--trace-gc,...`) pass through to stderr.
        if (!line.startsWith("{")) {
          if (line.trim()) console.error(line);
          continue;
        }
        const sample: Sample = JSON.parse(line);
        samples.push(sample);
        if (
          options.oversized > 0 && sample.refusals === undefined &&
          sample.applies % options.oversized === 0 && sample.applies < options.applies &&
          publishing === undefined
        ) {
          publishOversized();
        }
      }
    }
    const code = (await link.status).code;
    await publishing?.catch((e) => log(`publishing the oversized message: ${e}`));
    for (const s of samples) {
      log(
        `${s.refusals !== undefined ? `refusal ${s.refusals}, ` : ""}after ${s.applies}: VmRSS ${
          (s.rssKiB / 1024).toFixed(1)
        } MiB, VmHWM ${(s.hwmKiB / 1024).toFixed(1)} MiB (anon ${
          (s.anonKiB / 1024).toFixed(1)
        }, file ${(s.fileKiB / 1024).toFixed(1)}), heap ${(s.heapUsed / MiB).toFixed(1)} / ${
          (s.heapTotal / MiB).toFixed(1)
        } MiB, CPU ${(s.cpuMs / 1000).toFixed(1)} s, ${(s.ms / 1000).toFixed(0)} s`,
      );
    }
    if (code !== 0) throw new Error(`the link's child exited ${code}`);
    // From the 10th apply on (the converge and the heap's first growth left behind): the middle
    // of the samples, and the CPU time of an interval apply.
    const steady = samples.filter((s) => s.applies >= 10);
    const median = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    };
    const summary = steady.length < 2
      ? ""
      : `From the 10th apply on, ${steady.length} samples: VmRSS median ${
        (median(steady.map((s) => s.rssKiB)) / 1024).toFixed(1)
      } MiB (${(Math.min(...steady.map((s) => s.rssKiB)) / 1024).toFixed(1)}-${
        (Math.max(...steady.map((s) => s.rssKiB)) / 1024).toFixed(1)
      }), CPU ${
        ((steady.at(-1)!.cpuMs - steady[0]!.cpuMs) / (steady.at(-1)!.applies - steady[0]!.applies))
          .toFixed(0)
      } ms an apply (user + system).`;
    if (summary) log(summary);
    const refusalSamples = samples.filter((s) => s.refusals !== undefined);
    const firstRefusal = refusalSamples[0];
    const afterRefusals = firstRefusal === undefined
      ? []
      : samples.filter((s) => s.refusals === undefined && s.ms > firstRefusal.ms);
    const refusalSummary = options.oversized === 0
      ? ""
      : `${published} messages of ${
        oversized?.length ?? 0
      } bytes published, ${refusalSamples.length} refused; VmRSS right after each refusal: ${
        refusalSamples.map((s) => (s.rssKiB / 1024).toFixed(1)).join(", ") || "-"
      } MiB; the ${afterRefusals.length} apply samples after the first refusal: median ${
        afterRefusals.length ? (median(afterRefusals.map((s) => s.rssKiB)) / 1024).toFixed(1) : "-"
      } MiB, at most ${
        afterRefusals.length
          ? (Math.max(...afterRefusals.map((s) => s.rssKiB)) / 1024).toFixed(1)
          : "-"
      } MiB.`;
    if (refusalSummary) log(refusalSummary);
    const markdown = [
      `Link memory: ${DIRS} directories + ${
        DIRS * FILES_PER_DIR
      } files, \`--every 1s\` on a clock ${options.speed} times faster; the link ${
        options.source ? "from its sources" : options.onefile ? "one-file, as built" : "bundled"
      }, ${options.noLinkFlags ? "without" : "with"} the link's run flags (\`${
        HOST_COMMAND_FLAGS.link?.join(" ")
      }\`), V8 flags \`${options.v8Flags.join(" ") || "(none)"}\`.`,
      "",
      "| applies | VmRSS MiB | VmHWM MiB (peak so far) | RssAnon / RssFile MiB | V8 heap used / total MiB | external MiB | CPU s | elapsed s |",
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...samples.map((s) =>
        `| ${s.refusals !== undefined ? `refusal ${s.refusals}, ` : ""}${s.applies} | ${
          (s.rssKiB / 1024).toFixed(1)
        } | ${(s.hwmKiB / 1024).toFixed(1)} | ${(s.anonKiB / 1024).toFixed(1)} / ${
          (s.fileKiB / 1024).toFixed(1)
        } | ${(s.heapUsed / MiB).toFixed(1)} / ${(s.heapTotal / MiB).toFixed(1)} | ${
          (s.external / MiB).toFixed(1)
        } | ${(s.cpuMs / 1000).toFixed(1)} | ${(s.ms / 1000).toFixed(0)} |`
      ),
      "",
      ...(summary ? [summary, ""] : []),
      ...(refusalSummary ? [refusalSummary, ""] : []),
      `deno ${Deno.version.deno}, Linux ${Deno.osRelease()}, ${navigator.hardwareConcurrency} cores.`,
    ].join("\n");
    console.log(markdown);
    await Deno.mkdir(OUT_DIR, { recursive: true });
    const stamp = new Date().toISOString().replaceAll(/[:.]/g, "-");
    await Deno.writeTextFile(`${OUT_DIR}/link-memory-${stamp}.md`, `${markdown}\n`);
    await Deno.writeTextFile(
      `${OUT_DIR}/link-memory-${stamp}.json`,
      JSON.stringify({ date: new Date().toISOString(), options, samples }, null, 2),
    );
    log(`wrote ${OUT_DIR}/link-memory-${stamp}.md and .json`);
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    try {
      link?.kill("SIGKILL");
    } catch { /* exited */ }
    await deleteNodeAccount(endpoints, node).catch((e) => log(`cleanup: account: ${e}`));
    await api("DELETE", `/api/vhosts/${encodeURIComponent(vhost)}`).catch((e) =>
      log(`cleanup: vhost: ${e}`)
    );
    await Deno.remove(dir, { recursive: true }).catch((e) => log(`cleanup: ${dir}: ${e}`));
    log(`cleanup: removed vhost ${vhost}, account ${node} and ${dir}`);
  }
}

function parseArgs(args: string[]): Options {
  const options: Options = {
    applies: 1000,
    source: false,
    v8Flags: [],
    everyApply: false,
    noLinkFlags: false,
    onefile: false,
    speed: SPEED,
    oversized: 0,
  };
  let flagsGiven = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const n = Number(args[i + 1]);
    if (a === "--applies" && Number.isInteger(n) && n > 0) {
      options.applies = n;
      i++;
    } else if (a === "--source") {
      options.source = true;
    } else if (a === "--no-link-flags") {
      options.noLinkFlags = true;
    } else if (a === "--speed" && n > 0) {
      options.speed = n;
      i++;
    } else if (a === "--oversized" && Number.isInteger(n) && n > 0) {
      options.oversized = n;
      i++;
    } else if (a === "--onefile") {
      options.onefile = true;
    } else if (a === "--every-apply") {
      options.everyApply = true;
    } else if (a === "--v8-flags" && args[i + 1] !== undefined) {
      flagsGiven = true;
      if (args[++i] !== "") options.v8Flags.push(args[i]!);
    } else {
      throw new Error(
        `unknown argument "${a}"; usage: deno run -A bench/link_memory_bench.ts [--applies N] [--source] [--v8-flags FLAGS] [--every-apply] [--no-link-flags] [--onefile] [--speed X] [--oversized K]`,
      );
    }
  }
  // By default the flags the built host runs with (scripts/build_hosts.ts); `--v8-flags ""`: none.
  if (!flagsGiven) options.v8Flags.push(...HOST_V8);
  if (options.onefile && options.source) throw new Error("--onefile runs the bundle, not --source");
  return options;
}

if (import.meta.main) {
  await parent(parseArgs(Deno.args));
}
