/**
 * Rule 3 of docs/design.md ("Hostile inputs"): no input crashes a reader. Every JSON reader
 * (declaration, link message, report at ingest, build message, store, reconcile result, watch
 * state, first-seen state) refuses nesting deeper than lib/text_bounds.ts's `MAX_JSON_DEPTH` with
 * its own sentence naming the bound, and a very long line (one string or key of megabytes) with
 * its ordinary refusal: never a RangeError. Seeded: MESH_FUZZ_SEED replays a run.
 */

import { assert, assertStringIncludes } from "../support/assert.ts";
import { rng } from "../support/rng.ts";
import { readSource } from "../../host/apply.ts";
import { readReport } from "../../control/report_check.ts";
import { checkReportMessage, readDeclarationMessage } from "../../lib/broker_read.ts";
import { BuildRequest, decodeMessage } from "../../lib/broker.ts";
import { readDriftSummary } from "../../host/drift_summary.ts";
import { MAX_STORE_BYTES, Store } from "../../host/store.ts";
import { loadWatchState } from "../../reconcile/watch/state.ts";
import { loadRepoSeen } from "../../reconcile/repo_seen.ts";
import { parseStamp } from "../../reconcile/stamp.ts";
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../lib/text_bounds.ts";

const enc = new TextEncoder();
const BOUND = `more than ${MAX_JSON_DEPTH} levels deep`;

/** What a reader said about `bytes`: its refusal's text, whether thrown or returned. */
type Reader = (bytes: Uint8Array, dir: string) => Promise<string>;

const thrown = async (f: () => unknown): Promise<string> => {
  try {
    const value = await f();
    return `accepted: ${JSON.stringify(value)?.slice(0, 200)}`;
  } catch (error) {
    if (error instanceof RangeError) throw error; // a crash: the test fails on it
    return (error as Error).message;
  }
};

const READERS: [string, Reader][] = [
  ["declaration", async (b) => {
    const input = await readSource(b, { name: "x", origin: "command", trusted: true });
    return input.refused?.map((p) => p.message).join("; ") ?? "accepted";
  }],
  ["declaration message (link)", (b) => thrown(() => readDeclarationMessage(b, "the message"))],
  ["report message (link)", (b) => thrown(() => checkReportMessage(b, "the report"))],
  ["report (ingest)", (b) => thrown(() => readReport(b, "the report"))],
  ["build request", (b) => thrown(() => decodeMessage(BuildRequest, b, "the request"))],
  ["store", async (b, dir) => {
    await Deno.writeFile(`${dir}/store.json`, b);
    return await thrown(() => Store.load(dir, { readOnly: true }));
  }],
  ["result (link)", async (b, dir) => {
    await Deno.writeFile(`${dir}/result.json`, b);
    const summary = await readDriftSummary(`${dir}/result.json`);
    return "problem" in summary ? String(summary.problem) : "accepted";
  }],
  ["watch state", async (b, dir) => {
    await Deno.writeFile(`${dir}/watch.json`, b);
    return await thrown(() => loadWatchState(`${dir}/watch.json`));
  }],
  ["first-seen state", async (b, dir) => {
    await Deno.writeFile(`${dir}/seen.json`, b);
    return await thrown(() => loadRepoSeen(`${dir}/seen.json`));
  }],
  ["stamp", (b) => thrown(() => parseStamp(b))],
];

Deno.test("json bounds: the depth scan counts brackets outside strings only", () => {
  assert(jsonTooDeep(`{"a":"${"[".repeat(1000)}"}`) === undefined);
  assert(jsonTooDeep(`{"a\\"[[[[":${"[".repeat(64)}${"]".repeat(64)}}`) === 11 + 63);
  assert(jsonTooDeep(`${"[".repeat(64)}${"]".repeat(64)}`) === undefined);
  assert(jsonTooDeep(`${"[".repeat(65)}${"]".repeat(65)}`) === 64);
});

Deno.test("json bounds: seeded deep nesting and long lines end in each reader's refusal, never a RangeError", async () => {
  const seed = Number(Deno.env.get("MESH_FUZZ_SEED") ?? 28);
  const r = rng(seed);
  const dir = await Deno.makeTempDir({ prefix: "mesh-json-bounds-" });
  try {
    for (let n = 0; n < 8; n++) {
      const depth = MAX_JSON_DEPTH + 1 + r.int(r.chance(0.25) ? 100_000 : 200);
      const deep = r.chance(0.5)
        ? "[".repeat(depth) + "]".repeat(depth)
        : '{"a":'.repeat(depth) + "null" + "}".repeat(depth);
      const text = r.pick([
        () => deep,
        () => `{"version":1,"resources":[],"x":${deep}}`,
        () => `{"kind":"report","node":"n","problems":[${deep}]}`,
        () => `{"version":2,"sources":{},"resources":[${deep}]}`,
      ])();
      for (const [name, read] of READERS) {
        const where = `seed ${seed}, input ${n} (depth ${depth}: ${text.slice(0, 40)}), ${name}`;
        const said = await read(enc.encode(text), dir);
        if (name === "stamp") assertStringIncludes(said, "is not", where); // a line, never JSON
        else assertStringIncludes(said, BOUND, where);
      }
    }
    for (let n = 0; n < 3; n++) {
      const long = r.pick(["a", "é", "😀", "\\\\"]).repeat(500_000 + r.int(1_500_000));
      const text = r.chance(0.5) ? `{"version":1,"x":"${long}"}` : `{"version":1,"${long}":1}`;
      for (const [name, read] of READERS) {
        const said = await read(enc.encode(text), dir);
        assert(
          !said.startsWith("accepted"),
          `seed ${seed}, long input ${n} (${text.length}), ${name}: ${said}`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("json bounds: a store or journal larger than its bound is refused by its size, not read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-store-bounds-" });
  try {
    for (const [file, what] of [["store.json", "store"], ["journal", "journal"]] as const) {
      const path = `${dir}/${file}`;
      // Sparse: made at once, and never read (a read of 64 MiB would show in the time).
      const f = await Deno.open(path, { write: true, create: true });
      await f.truncate(MAX_STORE_BYTES + 1);
      f.close();
      const said = await thrown(() => Store.load(dir, { readOnly: true }));
      assertStringIncludes(
        said,
        `Cannot read ${what} "${path}": it is larger than ${MAX_STORE_BYTES} bytes`,
      );
      await Deno.remove(path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
