/**
 * One build: fetch the source, check out the commit, build the image with the machine's container
 * runtime (detected as the host detects it), push it to the artifact store and return the answer.
 * A failure at any step is an answer with the reason, never an exception: a failed build is a
 * result, not a redelivery loop.
 *
 * @module
 */

import { join } from "node:path";
import { CommandError, run } from "../lib/command.ts";
import { messageOf } from "../lib/atomic.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";
import { type BuildAnswer, type BuildRequest, STORE_ADDRESS } from "../lib/broker.ts";
import { redactUrl } from "../lib/url.ts";
import { containerRuntime } from "../lib/container_runtime.ts";

/** How long a git step may take (ms). */
export const GIT_TIMEOUT_MS = 5 * 60_000;
/** How long an image build may take (ms). */
export const BUILD_TIMEOUT_MS = 60 * 60_000;
/** How long a push may take (ms). */
export const PUSH_TIMEOUT_MS = 20 * 60_000;
import { STORE_VARIABLE } from "./store_variable.ts";
export { STORE_VARIABLE };

/** Options for {@linkcode build}. */
export interface BuildOptions {
  /** The builder's name, in the answer. */
  builder: string;
  /** Where work directories are made (default the system's temporary directory). */
  workDir?: string;
  /**
   * The artifact store of the builder's own binding file (lib/binding.ts, written by the control
   * plane when the builder is a module): it wins over the request's and the environment's.
   */
  boundStore?: string;
  /** The environment's artifact store (used only when there is no binding and the request carries none). */
  envStore?: string;
  /** Told each step as it starts, for the CLI to print. */
  onStep?: (step: string) => void;
}

class BuildFailure extends Error {}

/**
 * The store a request is to be published to: the builder's own binding (`boundStore`, read from
 * its binding file at start), else the request's binding's address, else (a builder and a request
 * made by hand) the environment's.
 *
 * @throws {Error} when the request's binding has no address (never falls back), or there is none.
 */
export function storeFor(
  request: BuildRequest,
  envStore: string | undefined,
  options: { boundStore?: string } = {},
): string {
  if (options.boundStore !== undefined) return options.boundStore;
  if (request.artifactStore !== undefined) {
    const address = request.artifactStore.address.trim();
    if (address === "") {
      throw new BuildFailure(
        "the artifact store binding has no address; refused rather than falling back to anything (that would publish to a store on the wrong machine)",
      );
    }
    return address;
  }
  if (envStore !== undefined && envStore.trim() !== "") return envStore.trim();
  throw new BuildFailure(
    `the request carries no artifact store binding and ${STORE_VARIABLE} is not set`,
  );
}

/**
 * Builds `request` and returns the answer (`built` with image and digest, or `failed` with the
 * reason). The work directory is removed afterwards, whatever happened.
 */
export async function build(request: BuildRequest, options: BuildOptions): Promise<BuildAnswer> {
  const startedAt = new Date().toISOString();
  const base = {
    kind: "build-answer" as const,
    id: request.id,
    module: request.module,
    commit: request.commit,
    builder: options.builder,
    startedAt,
  };
  const step = (s: string) => options.onStep?.(s);
  let dir: string | undefined;
  let resolved: string | undefined;
  try {
    const store = storeFor(request, options.envStore, { boundStore: options.boundStore });
    if (!STORE_ADDRESS.test(store)) {
      throw new BuildFailure(`the artifact store address "${store}" is not host[:port][/path]`);
    }
    dir = await Deno.makeTempDir({ dir: options.workDir, prefix: "mesh-build-" });
    const checkout = join(dir, "src");
    step(`fetching ${request.source}`);
    await git(["clone", "--quiet", "--no-checkout", "--", request.source, checkout], {
      what: `Cannot fetch source "${request.source}"`,
    });
    const rev = await run(
      ["git", "-C", checkout, "rev-parse", "--verify", "--quiet", `${request.commit}^{commit}`],
      { allowFailure: true, timeoutMs: GIT_TIMEOUT_MS },
    );
    if (rev.code !== 0 || !/^[0-9a-f]{40}$/.test(rev.stdout.trim())) {
      throw new BuildFailure(
        `commit "${request.commit}" does not exist in "${request.source}"`,
      );
    }
    resolved = rev.stdout.trim();
    step(`checking out ${resolved}`);
    await git(["-C", checkout, "checkout", "--quiet", "--detach", resolved], {
      what: `Cannot check out ${resolved}`,
    });
    const file = await firstExisting(checkout, ["Containerfile", "Dockerfile"]);
    if (file === undefined) {
      throw new BuildFailure(`commit ${resolved} has no Containerfile or Dockerfile at its root`);
    }
    const runtime = await containerRuntime();
    const repository = `${store}/mesh/${request.module.toLowerCase()}`;
    const tag = `${repository}:${resolved.slice(0, 12)}`;
    step(`building ${tag} with ${runtime.program}`);
    await runStep([
      runtime.program,
      "build",
      "--file",
      join(checkout, file),
      "--tag",
      tag,
      checkout,
    ], {
      what: `The build of ${request.module} at ${resolved.slice(0, 12)} failed`,
      timeoutMs: BUILD_TIMEOUT_MS,
    });
    step(`pushing ${tag}`);
    let digest: string;
    try {
      digest = await push(runtime.program, tag, dir);
    } finally {
      await run([runtime.program, "rmi", tag], { allowFailure: true, timeoutMs: 60_000 });
    }
    return {
      ...base,
      resolved,
      outcome: "built",
      image: `${repository}@${digest}`,
      digest,
      finishedAt: new Date().toISOString(),
    };
  } catch (error) {
    return {
      ...base,
      ...(resolved !== undefined ? { resolved } : {}),
      outcome: "failed",
      reason: scrubSource(messageOf(error), request.source).slice(0, 20_000),
      finishedAt: new Date().toISOString(),
    };
  } finally {
    if (dir !== undefined) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function push(program: "docker" | "podman", tag: string, dir: string): Promise<string> {
  const what = `The artifact store refused the push of ${tag}`;
  if (program === "podman") {
    const file = join(dir, "digest");
    await runStep(["podman", "push", "--digestfile", file, tag], {
      what,
      timeoutMs: PUSH_TIMEOUT_MS,
    });
    const digest = (await readRegularTextFile(file, { maxBytes: 4096 })).trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) {
      throw new BuildFailure(`podman push wrote no digest (it wrote "${digest.slice(0, 100)}")`);
    }
    return digest;
  }
  await runStep(["docker", "push", tag], { what, timeoutMs: PUSH_TIMEOUT_MS });
  const out = await runStep(
    ["docker", "image", "inspect", "--format", "{{json .RepoDigests}}", tag],
    { what: `Cannot read the digest of ${tag}`, timeoutMs: 60_000 },
  );
  const repository = tag.slice(0, tag.lastIndexOf(":"));
  const digests: string[] = JSON.parse(out);
  const mine = digests.find((d) => d.startsWith(`${repository}@`));
  if (mine === undefined) throw new BuildFailure(`docker names no digest of ${tag} after the push`);
  return mine.slice(mine.indexOf("@") + 1);
}

async function git(args: string[], { what }: { what: string }): Promise<void> {
  await runStep(["git", ...args], { what, timeoutMs: GIT_TIMEOUT_MS });
}

async function runStep(
  argv: string[],
  { what, timeoutMs }: { what: string; timeoutMs: number },
): Promise<string> {
  try {
    const out = await run(argv, {
      timeoutMs,
      // Never ask a person for anything: a builder has nobody to ask.
      env: { GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "/bin/false" },
    });
    return out.stdout;
  } catch (error) {
    if (error instanceof CommandError) throw new BuildFailure(`${what}: ${error.message}`);
    throw error;
  }
}

async function firstExisting(dir: string, names: string[]): Promise<string | undefined> {
  for (const name of names) {
    try {
      if ((await Deno.lstat(join(dir, name))).isFile) return name;
    } catch { /* next */ }
  }
  return undefined;
}

/** `text` with the source named only as {@linkcode redactUrl} shows it (git echoes URLs). */
function scrubSource(text: string, source: string): string {
  let out = text.replaceAll(source, redactUrl(source));
  try {
    const password = new URL(source).password;
    if (password !== "") {
      for (const form of new Set([password, decodeURIComponent(password)])) {
        out = out.replaceAll(form, "***");
      }
    }
  } catch { /* not a URL: nothing more to hide */ }
  return out;
}
