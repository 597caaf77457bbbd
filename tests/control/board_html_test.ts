/**
 * `board --html` checked in a REAL browser: headless Debian `chromium` renders the page written by
 * the real command line over a real inventory (./drift_estate.ts: a node in every drift state, a
 * failed node, a node that never spoke, machine text that tries to be markup), and the test reads
 * the DOM the browser produced.
 *
 * - the counts on the page equal the JSON's (`board --json` printed by the same command, from the
 *   same gathered board);
 * - every node is listed, in the JSON's order, with both verdicts;
 * - a node that never spoke shows no time; a node never reconciled shows no drift time;
 * - machine text stays text (no element injected, the title unchanged), and bidirectional,
 *   invisible and control characters in it show as `<U+XXXX>`;
 * - the page's Content-Security-Policy, read from the page itself, allows no inline code but its
 *   one style and one script element, by their sha256 hashes (no 'unsafe-inline', no style
 *   attribute or handler), and Chromium reports no violation of it;
 * - without JavaScript every node is still listed (the filter stays hidden);
 * - the browser's own network log shows no request other than the page's file.
 *
 * A screenshot is written to bench/out/board.png for people (not committed).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { assert, assertEquals } from "../support/assert.ts";
import { assertShown } from "../support/disguise.ts";
import { ROOT } from "../support/mod.ts";
import { chromium } from "../support/chromium.ts";
import { controlCli, freshInventory } from "./support.ts";
import { ATTENTION, NODES, seedDriftEstate } from "./drift_estate.ts";

interface Row {
  name: string;
  verdict: string;
  drift: string;
  /** The rest of the row's opening tag (hidden="" when the filter hid it). */
  attributes: string;
  html: string;
  cells: string[];
}

/** The rows of the rendered table, in document order. */
function rows(dom: string): Row[] {
  const tbody = /<tbody>([^]*)<\/tbody>/.exec(dom)?.[1] ?? "";
  const out: Row[] = [];
  for (
    const m of tbody.matchAll(
      /<tr data-node="([^"]*)" data-verdict="([^"]*)" data-drift="([^"]*)"([^>]*)>([^]*?)<\/tr>/g,
    )
  ) {
    out.push({
      name: m[1]!,
      verdict: m[2]!,
      drift: m[3]!,
      attributes: m[4]!,
      html: m[5]!,
      cells: [...m[5]!.matchAll(/<td[^>]*>([^]*?)<\/td>/g)].map((c) => c[1]!),
    });
  }
  return out;
}

/** The count tiles: kind -> verdict -> number shown. */
function tiles(dom: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = { declaration: {}, drift: {} };
  for (
    const m of dom.matchAll(
      /data-count="(declaration|drift)" data-verdict="([^"]+)"><span class="n">(\d+)<\/span>/g,
    )
  ) {
    out[m[1]!]![m[2]!] = Number(m[3]);
  }
  return out;
}

const DATE = /\d{4}-\d{2}-\d{2}|1970/;

Deno.test("board --html renders in Chromium with the JSON's counts, every node, and no time for a node that never spoke", async (t) => {
  const inv = await freshInventory();
  const dir = await Deno.makeTempDir({ prefix: "mesh-board-html-" });
  try {
    await seedDriftEstate(inv);
    const page = `${dir}/board.html`;
    const out = await controlCli(["board", "--html", page, "--json"], inv.env);
    assertEquals(out.code, 0, out.stderr);
    // The first line says where the page went; the JSON follows, from the same gathered board.
    const [said, ...rest] = out.stdout.split("\n");
    assertEquals(said, `wrote the board of 8 nodes to ${page}`);
    const board = JSON.parse(rest.join("\n")) as {
      generatedAt: string;
      nodes: number;
      counts: Record<string, number>;
      driftCounts: Record<string, number>;
      machines: { name: string; verdict: string; drift: { verdict: string } }[];
    };
    const dom = await chromium(`file://${page}`, "--dump-dom");

    await t.step("one gathering: the page's time is the JSON's", () => {
      assert(
        dom.includes(`<time datetime="${board.generatedAt}">`),
        `the page was not rendered from the board gathered at ${board.generatedAt}`,
      );
    });

    await t.step("the counts on the page equal the JSON's", () => {
      const shown = tiles(dom);
      assertEquals(shown.declaration, board.counts);
      assertEquals(shown.drift, board.driftCounts);
    });

    await t.step("every node is listed, in the JSON's order, with both verdicts", () => {
      assertEquals(
        rows(dom).map((r) => [r.name, r.verdict, r.drift]),
        board.machines.map((m) => [m.name, m.verdict, m.drift.verdict]),
      );
    });

    await t.step(
      "a node that never spoke shows no time; one never reconciled no drift time",
      () => {
        const byName = new Map(rows(dom).map((r) => [r.name, r]));
        const silent = byName.get(NODES.silent)!;
        assert(!/<time/.test(silent.html), `a time on the never-spoke row: ${silent.html}`);
        assert(!DATE.test(silent.html.replace(/<[^>]*>/g, "")), silent.html);
        assert(silent.cells[3]!.includes("never spoke"), silent.cells[3]);
        const unchecked = byName.get(NODES.unchecked)!;
        assert(!/<time/.test(unchecked.cells[2]!), unchecked.cells[2]);
        // And a node that spoke does show one (the assertion above is not vacuous).
        assert(/<time datetime="/.test(byName.get(NODES.rogue)!.cells[3]!));
      },
    );

    await t.step("machine text stays text", () => {
      assertEquals((dom.match(/<script\b/g) ?? []).length, 1, "a script element was injected");
      assert(!/<img\b/.test(dom), "an img element was injected");
      assert(/<title>mesh board · 8 nodes<\/title>/.test(dom), "the title changed");
      assert(dom.includes("&lt;img src=x onerror="), "the hostile text is not shown as text");
    });

    await t.step("bidirectional, invisible and control characters show as <U+XXXX>", () => {
      const failed = rows(dom).find((r) => r.name === NODES.failed)!;
      const shown = failed.cells[4]!.replace(/<[^>]*>/g, "").replaceAll("&lt;", "<")
        .replaceAll("&gt;", ">").replaceAll("&amp;", "&");
      assertShown(shown, "the failed node's problem in Chromium");
    });

    await t.step(
      "the page's policy allows its own style and script by hash, nothing else inline",
      async () => {
        const html = await Deno.readTextFile(page);
        const policy = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)
          ?.[1];
        assert(policy !== undefined, "the page has no Content-Security-Policy");
        assert(!/unsafe-/.test(policy), `the policy allows unsafe code: ${policy}`);
        const directives = new Map(
          policy.split(";").map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k!, v]),
        );
        assertEquals(directives.get("default-src"), ["'none'"]);
        const hash = (text: string) =>
          `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
        const styles = [...html.matchAll(/<style>([^]*?)<\/style>/g)].map((m) => m[1]!);
        const scripts = [...html.matchAll(/<script>([^]*?)<\/script>/g)].map((m) => m[1]!);
        assertEquals([styles.length, scripts.length], [1, 1]);
        assertEquals(directives.get("style-src"), styles.map(hash));
        assertEquals(directives.get("script-src"), scripts.map(hash));
        // No inline style attribute or handler, which a hash cannot allow.
        for (const tag of html.match(/<[a-z][^>]*>/gi) ?? []) {
          assert(!/\s(style|on[a-z]+)=/i.test(tag), `an inline attribute: ${tag}`);
        }
        // The browser applies it: no violation said, and the script (its hash) ran.
        const console: string[] = [];
        const applied = await chromium(`file://${page}`, "--dump-dom", { console });
        assertEquals(console.filter((l) => /Content.Security.Policy/i.test(l)), []);
        assert(/<div id="filter">/.test(applied), "the script, allowed by its hash, did not run");
      },
    );

    await t.step(
      "the filter appears with JavaScript; without it every node is listed",
      async () => {
        assert(/<div id="filter">/.test(dom), "the script did not show the filter");
        // Without scripts the DOM is the page as written (Chromium's --dump-dom itself needs
        // scripts, so the file is read): every node is there and the filter stays hidden.
        const plain = await Deno.readTextFile(page);
        assert(/<div id="filter" hidden>/.test(plain), "the filter shows without JavaScript");
        assertEquals(rows(plain).map((r) => r.name), board.machines.map((m) => m.name));
      },
    );

    await t.step("the filter, linked by address, shows only the nodes asked for", async () => {
      const visible = (dom: string) =>
        rows(dom).filter((r) => !/ hidden=""/.test(r.attributes)).map((r) => r.name).sort();
      const stale = await chromium(`file://${page}#drift:stale`, "--dump-dom");
      assertEquals(visible(stale), [NODES.stale]);
      const attention = await chromium(`file://${page}#attention`, "--dump-dom");
      assertEquals(visible(attention), [...ATTENTION].sort());
      const failed = await chromium(`file://${page}#verdict:failed`, "--dump-dom");
      assertEquals(visible(failed), [NODES.failed]);
    });

    await t.step("the browser fetched nothing but the page", async () => {
      const netLog = `${dir}/net.json`;
      await chromium(`file://${page}`, "--dump-dom", { netLog });
      const log = JSON.parse(await Deno.readTextFile(netLog)) as {
        constants: { logEventTypes: Record<string, number> };
        events: { type: number; params?: { url?: string; initiator?: string } }[];
      };
      const start = log.constants.logEventTypes["URL_REQUEST_START_JOB"];
      // The browser's own requests (time, updates, accounts; "not an origin") are its business;
      // anything a document asked for names the document's origin ("null" for a file).
      const asked = log.events.filter((e) =>
        e.type === start && e.params?.initiator !== undefined &&
        e.params.initiator !== "not an origin"
      ).map((e) => e.params?.url);
      assertEquals(asked, [], "the page made the browser fetch something");
      // Statically too: no address, stylesheet or font from anywhere else.
      const html = await Deno.readTextFile(page);
      const tags = html.match(/<[a-z][^>]*>/gi) ?? [];
      for (const tag of tags) {
        assert(!/\s(src|href|action|srcset|poster)=/i.test(tag), `a tag refers outside: ${tag}`);
      }
      const style = /<style>([^]*?)<\/style>/.exec(html)?.[1] ?? "";
      assert(!/url\(|@import|@font-face/i.test(style), "the style refers to something outside");
    });

    await t.step("a screenshot for people", async () => {
      await Deno.mkdir(`${ROOT}bench/out`, { recursive: true });
      const png = `${ROOT}bench/out/board.png`;
      await chromium(`file://${page}`, `--screenshot=${png}`, { windowSize: "1400,1400" });
      const head = (await Deno.readFile(png)).subarray(0, 8);
      assertEquals([...head], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    });
  } finally {
    await inv.drop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
