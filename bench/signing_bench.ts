/**
 * Benchmark of signed declarations (issue 27, "Performance"): the host's verification of a
 * declaration of bench/host_bench.ts's size (100 directories, 1,000 files of 100 to 200 bytes),
 * and control's signing of one, as lib/signing.ts does them.
 *
 * Run from the repository root: `deno run -A bench/signing_bench.ts [--runs N]` (N verifications,
 * default 2,000, after 200 unrecorded). It runs the same measurement twice: in this process (Deno's
 * default V8 flags, as mesh-control runs) and in a child with the built hosts' V8 flags
 * (scripts/host_flags.ts HOST_V8_FLAGS: no optimizing compiler; what a node's mesh-host runs).
 *
 * What is timed, each call alone, per call:
 * - `verifyDeclaration(message, key)`: what the link calls before it applies (host/link.ts
 *   `trustProblem`): the sha256 of the declaration's bytes against its digest, then the Ed25519
 *   verification of the signed fields;
 * - its parts: the sha256 of the declaration alone, and `crypto.subtle.verify` alone;
 * - `signDeclaration(key, fields)`: what control/push.ts `publishRendered` calls per node.
 *
 * Prints Markdown (and the raw per-call samples' summary as JSON on `--json`); writes nothing.
 *
 * @module
 */

import {
  controlKeyOf,
  declarationSignedBytes,
  generateSigningKey,
  sha256Digest,
  signDeclaration,
  verifyDeclaration,
} from "../lib/signing.ts";
import { HOST_V8_FLAGS } from "../scripts/host_flags.ts";

const DIRS = 100;
const FILES_PER_DIR = 10;

/** A declaration like bench/host_bench.ts's: 100 directories, 1,000 files of 100 to 200 bytes. */
function declarationText(): string {
  let seed = 0x6d657368;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x80000000;
  };
  const resources: unknown[] = [];
  for (let d = 1; d <= DIRS; d++) {
    const dir = `d${String(d).padStart(3, "0")}`;
    resources.push({ id: dir, type: "directory", path: `/srv/bench/${dir}`, mode: "0755" });
    for (let f = 1; f <= FILES_PER_DIR; f++) {
      const rel = `${dir}/f${String(f).padStart(2, "0")}.conf`;
      const target = 100 + Math.floor(random() * 100);
      let content = `# ${rel}: managed by bench/signing_bench.ts\n`;
      for (let k = 1; content.length < target; k++) {
        content += `key_${k} = ${Math.floor(random() * 1e9).toString(16)}\n`;
      }
      resources.push({
        id: rel.replace("/", "-"),
        type: "file",
        path: `/srv/bench/${rel}`,
        content: content.slice(0, 200),
        mode: "0644",
      });
    }
  }
  return JSON.stringify({ version: 1, resources }, null, 1);
}

interface Figure {
  label: string;
  what: string;
  firstMs: number;
  perCallMs: number[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/**
 * Times each of `runs` calls of `fn` alone (after `warm` unrecorded ones, the first of which,
 * cold, is kept in `firstMs`).
 */
async function perCall(
  fn: () => Promise<unknown>,
  runs: number,
  warm: number,
): Promise<{ firstMs: number; perCallMs: number[] }> {
  const t0 = performance.now();
  await fn();
  const firstMs = performance.now() - t0;
  for (let i = 1; i < warm; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return { firstMs, perCallMs: out };
}

/** The measurement, in this process: the figures and the declaration's size. */
async function measure(runs: number): Promise<{ bytes: number; figures: Figure[] }> {
  const text = declarationText();
  const bytes = new TextEncoder().encode(text);
  const { key } = await generateSigningKey();
  const held = await controlKeyOf(key.spki, "the bench's key");
  const fields = {
    node: "bench-node",
    epoch: crypto.randomUUID(),
    generation: 7,
    digest: await sha256Digest(bytes),
    pushedAt: new Date().toISOString(),
  };
  const signed = await signDeclaration(key, fields);
  const message = { kind: "declaration" as const, ...fields, declaration: text, ...signed };
  const verdict = await verifyDeclaration(message, held);
  if (!verdict.ok) throw new Error(`the bench's declaration does not verify: ${verdict.problem}`);
  const forged = { ...message, generation: 8 };
  if ((await verifyDeclaration(forged, held)).ok) throw new Error("a forged message verified");
  const signedBytes = declarationSignedBytes(key.keyId, fields);
  const signature = Uint8Array.from(atob(signed.signature), (c) => c.charCodeAt(0));
  const warm = Math.min(200, runs);
  const figures: Figure[] = [
    {
      label: "verifyDeclaration",
      what: "what the link calls before it applies: sha256 of the declaration + Ed25519 verify",
      ...await perCall(() => verifyDeclaration(message, held), runs, warm),
    },
    {
      label: "sha256 of the declaration",
      what: "its first part alone (sha256Digest of the declaration's UTF-8 bytes)",
      ...await perCall(() => sha256Digest(bytes), runs, warm),
    },
    {
      label: "Ed25519 verify",
      what: "its second part alone (crypto.subtle.verify of the signed fields)",
      ...await perCall(
        () =>
          crypto.subtle.verify(
            "Ed25519",
            held.publicKey,
            signature as BufferSource,
            signedBytes as BufferSource,
          ),
        runs,
        warm,
      ),
    },
    {
      label: "signDeclaration",
      what: "control's signing of one declaration (publishRendered, per node)",
      ...await perCall(() => signDeclaration(key, fields), runs, warm),
    },
  ];
  return { bytes: bytes.length, figures };
}

function table(title: string, bytes: number, figures: Figure[]): string {
  return [
    `${title} (declaration of ${bytes.toLocaleString("en-US")} bytes, ${
      DIRS * FILES_PER_DIR
    } files and ${DIRS} directories):`,
    "",
    "| what | how | first (cold) ms | calls | median ms | p99 ms | max ms |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...figures.map((f) =>
      `| ${f.label} | ${f.what} | ${f.firstMs.toFixed(3)} | ${f.perCallMs.length} | ${
        median(f.perCallMs).toFixed(3)
      } | ${quantile(f.perCallMs, 0.99).toFixed(3)} | ${Math.max(...f.perCallMs).toFixed(3)} |`
    ),
  ].join("\n");
}

const args = [...Deno.args];
const json = args.includes("--json");
const at = args.indexOf("--runs");
const runs = at >= 0 ? Number(args[at + 1]) : 2_000;
if (!Number.isInteger(runs) || runs < 1) {
  throw new Error(`--runs: "${args[at + 1]}" is not a count`);
}

const own = await measure(runs);
if (json) {
  console.log(JSON.stringify({
    bytes: own.bytes,
    figures: own.figures.map((f) => ({
      ...f,
      perCallMs: undefined,
      medianMs: median(f.perCallMs),
    })),
    tables: table("", own.bytes, own.figures),
  }));
  Deno.exit(0);
}
const child = await new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    "--quiet",
    ...HOST_V8_FLAGS,
    new URL(import.meta.url).pathname,
    "--runs",
    String(runs),
    "--json",
  ],
  stdout: "piped",
  stderr: "inherit",
}).output();
if (child.code !== 0) throw new Error(`the child with the hosts' V8 flags exited ${child.code}`);
const hosted = JSON.parse(new TextDecoder().decode(child.stdout)) as { tables: string };
const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
console.log([
  `# Signed declarations, ${new Date().toISOString()}`,
  "",
  `Machine: ${navigator.hardwareConcurrency} cores, deno ${Deno.version.deno}, load ${load}.`,
  "",
  table("Deno's default V8 flags (mesh-control)", own.bytes, own.figures),
  "",
  `With the built hosts' V8 flags (\`${HOST_V8_FLAGS.join(" ")}\`, mesh-host)` +
  hosted.tables.replace(/^ \(/, " ("),
].join("\n"));
