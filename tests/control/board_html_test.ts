/**
 * `board --html` checked in a REAL browser: headless Debian `chromium` renders the page written by
 * the real command line over a real inventory (./drift_estate.ts: a node in every drift state, a
 * failed node, a node that never spoke, machine text that tries to be markup), and the test reads
 * the DOM the browser produced.
 *
 * - the counts on the page equal the JSON's (`board --json` printed by the same command, from the
 *   same gathered board);
 * - every node is listed with both verdicts: the nodes `status` lists first, as rows written in
 *   the page, then the healthy ones (a small fleet: the section open, rendered by the script from
 *   the page's data), each part in the JSON's order;
 * - a node that never spoke shows no time; a node never reconciled shows no drift time;
 * - machine text stays text (no element injected, the title unchanged), and bidirectional,
 *   invisible and control characters in it show as `<U+XXXX>`;
 * - the page's Content-Security-Policy, read from the page itself, allows no inline code but its
 *   one style and one script element, by their sha256 hashes (no 'unsafe-inline', no style
 *   attribute or handler), and Chromium reports no violation of it;
 * - without JavaScript every node `status` lists is still a row, the healthy ones are counted and a
 *   note says their list needs JavaScript (the filter stays hidden);
 * - the browser's own network log shows no request other than the page's file.
 *
 * And over a synthetic fleet of 260 healthy nodes (boardHtml itself, no database): nothing of the
 * healthy list at load; the search by name finds a healthy node on a later page; paging shows the
 * next page; a row the script renders is the markup nodeRow writes; machine text that tries to end
 * the data block (`</script>`, `<!--`) stays text in it and in the rows.
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
import { boardHtml, HEALTHY_PAGE, nodeRow } from "../../control/board_html.ts";
import type { Board, BoardMachine } from "../../control/report.ts";
import { isDriftAlarm } from "../../control/drift.ts";

/** Whether `status` lists a node (and the page writes it as a row): report.ts's rule. */
const listed = (m: { verdict: string; drift: { verdict: string } }) =>
  m.verdict !== "ok" || isDriftAlarm(m.drift.verdict as never);

interface Row {
  name: string;
  verdict: string;
  drift: string;
  /** The rest of the row's opening tag (hidden="" when the filter hid it). */
  attributes: string;
  html: string;
  cells: string[];
}

/** The node rows of the page (the listed nodes', then the healthy ones'), in document order. */
function rows(dom: string): Row[] {
  const out: Row[] = [];
  for (
    const m of dom.matchAll(
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

    await t.step("every node is listed, the listed ones first, in the JSON's order", () => {
      const order = [...board.machines.filter(listed), ...board.machines.filter((m) => !listed(m))];
      assert(order.some((m) => !listed(m)), "the estate has no healthy node");
      assertEquals(
        rows(dom).map((r) => [r.name, r.verdict, r.drift]),
        order.map((m) => [m.name, m.verdict, m.drift.verdict]),
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
      // The page's script and its data block, nothing else.
      assertEquals((dom.match(/<script\b/g) ?? []).length, 2, "a script element was injected");
      assertEquals(
        (dom.match(/<script type="application\/json" id="healthy-data">/g) ?? []).length,
        1,
      );
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
      "the filter appears with JavaScript; without it every listed node is a row, the rest counted",
      async () => {
        assert(/<div id="filter">/.test(dom), "the script did not show the filter");
        // Without scripts the DOM is the page as written (Chromium's --dump-dom itself needs
        // scripts, so the file is read): every node status lists is there, the filter stays
        // hidden, the healthy ones are counted and a note says their list needs JavaScript.
        const plain = await Deno.readTextFile(page);
        assert(/<div id="filter" hidden>/.test(plain), "the filter shows without JavaScript");
        assertEquals(
          rows(plain).map((r) => r.name),
          board.machines.filter(listed).map((m) => m.name),
        );
        const healthy = board.machines.filter((m) => !listed(m)).length;
        assert(
          plain.includes(`<details id="healthy" data-healthy="${healthy}" open>`),
          "the healthy nodes are not counted (or the small fleet's section is not open)",
        );
        assert(
          /<noscript>[^]*needs JavaScript[^]*<\/noscript>/.test(plain),
          "no note for no script",
        );
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
      // A filter reaches the healthy nodes too: clean ones are listed (the failed node's drift is
      // an alarm) and never-reconciled ones.
      const clean = await chromium(`file://${page}#drift:clean`, "--dump-dom");
      assertEquals(visible(clean), [NODES.clean]);
      const unchecked = await chromium(`file://${page}#drift:not-checked`, "--dump-dom");
      assertEquals(visible(unchecked), [NODES.silent, NODES.unchecked].sort());
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

/** A node of the synthetic fleet: ok and clean unless told otherwise. */
function machine(name: string, over: Partial<BoardMachine> = {}): BoardMachine {
  return {
    name,
    system: "debian",
    kind: "server",
    verdict: "ok",
    words: "ok",
    applied: 4,
    total: 4,
    modules: ["base", "web"],
    generation: 3,
    reportedGeneration: 3,
    lastReportAt: "2026-05-04T10:58:30.250Z",
    intervalMs: 300_000,
    intervalStated: true,
    quietAllowedMs: 660_000,
    overdue: false,
    trigger: "interval",
    problems: [],
    drift: {
      verdict: "clean",
      words: "clean",
      findings: 0,
      counts: [],
      ranAt: "2026-05-04T10:55:00Z",
      ageSeconds: 300,
      intervalSeconds: 900,
      registry: "/var/lib/mesh/reconcile/registry.yaml",
    },
    ...over,
  };
}

/** Text that tries to end the data block, open a comment or a script, and hide itself. */
const BREAKOUT = `</script><script>document.title='owned'</script><!--<script>\u2028\u202e`;

/** 4 listed nodes, then 260 healthy ones (`hx-000`...), one with hostile text, one never reconciled. */
function syntheticBoard(): Board {
  const listedOnes = [
    machine("bad-failed", {
      verdict: "failed",
      words: "failed",
      applied: 2,
      problems: [{ id: "app", message: `exit 1 ${BREAKOUT}` }],
    }),
    machine("bad-refused", { verdict: "refused", words: "refused", applied: 0 }),
    machine("bad-outstanding", { verdict: "outstanding", words: "outstanding" }),
    machine("bad-stale", {
      drift: { ...machine("x").drift, verdict: "stale", words: "stale", last: "clean" },
    }),
  ];
  const healthy = Array.from({ length: 260 }, (_, i) => {
    const name = `hx-${String(i).padStart(3, "0")}`;
    if (i === 7) {
      return machine(name, {
        system: `deb${BREAKOUT}`,
        trigger: `push ${BREAKOUT}`,
        modules: ["base", `evil${BREAKOUT}`],
        problems: [{ path: "/etc/x", message: `warning ${BREAKOUT}` }],
      });
    }
    if (i === 8) {
      return machine(name, {
        drift: { verdict: "not-checked", words: "not checked", findings: 0, counts: [] },
      });
    }
    return machine(name, {
      lastReportAt: `2026-05-04T10:${String(i % 60).padStart(2, "0")}:00.000Z`,
    });
  });
  const machines = [...listedOnes, ...healthy];
  const counts = { ok: 0, failed: 0, refused: 0, outstanding: 0 } as Record<string, number>;
  const driftCounts = { clean: 0, stale: 0, "not-checked": 0 } as Record<string, number>;
  for (const m of machines) {
    counts[m.verdict] = (counts[m.verdict] ?? 0) + 1;
    driftCounts[m.drift.verdict] = (driftCounts[m.drift.verdict] ?? 0) + 1;
  }
  return {
    generatedAt: "2026-05-04T11:00:00.000Z",
    nodes: machines.length,
    graceMs: 60_000,
    counts: {
      "unknown-claim": 0,
      silent: 0,
      "never-spoke": 0,
      "not-pushed": 0,
      away: 0,
      ...counts,
    },
    driftCounts: { drift: 0, unobservable: 0, unreadable: 0, ...driftCounts },
    machines,
  } as Board;
}

/** The rows shown (not hidden), by name. */
const shownRows = (dom: string) =>
  rows(dom).filter((r) => !/ hidden=""/.test(r.attributes)).map((r) => r.name);

/** A row's markup without the line breaks the page writes between elements. */
const flat = (html: string) => html.replaceAll("\n", "");

Deno.test("board --html over 260 healthy nodes: searched, paged and rendered by the script as the page writes a row", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-board-page-" });
  try {
    const board = syntheticBoard();
    const healthy = board.machines.slice(4);
    const page = `${dir}/board.html`;
    const html = boardHtml(board);
    await Deno.writeTextFile(page, html);

    await t.step("at load: the listed nodes are rows, nothing of the healthy list", async () => {
      const dom = await chromium(`file://${page}`, "--dump-dom");
      assertEquals(rows(dom).map((r) => r.name), board.machines.slice(0, 4).map((m) => m.name));
      assert(/<div id="healthy-list" hidden="">/.test(dom), "the healthy list shows at load");
      assert(/<details id="healthy" data-healthy="260">/.test(dom), "the section is open at load");
      assert(/<tbody id="healthy-rows"><\/tbody>/.test(dom), "healthy rows were rendered at load");
      assertEquals(
        dom.match(/<title>[^<]*<\/title>/)?.[0],
        "<title>mesh board · 264 nodes</title>",
      );
    });

    await t.step("the search finds a healthy node by name, on a later page", async () => {
      const dom = await chromium(`file://${page}#find=HX-2`, "--dump-dom");
      // Any case; hx-200 ... hx-259 match, and no listed node.
      assertEquals(
        shownRows(dom),
        healthy.filter((m) => m.name.startsWith("hx-2")).map((m) => m.name),
      );
      const one = await chromium(`file://${page}#find=hx-234`, "--dump-dom");
      assertEquals(shownRows(one), ["hx-234"]);
      assert(one.includes('id="healthy-page">nodes 1–1 of 1 · page 1 of 1<'), "no page line");
      const none = await chromium(`file://${page}#find=nowhere`, "--dump-dom");
      assertEquals(shownRows(none), []);
      assert(none.includes("no healthy node matches"), "an empty search says nothing");
    });

    await t.step("paging shows the next page, and the last", async () => {
      const names = (from: number, to: number) => healthy.slice(from, to).map((m) => m.name);
      const first = await chromium(`file://${page}#verdict:ok`, "--dump-dom");
      // verdict ok: the stale node (ok, a drift alarm) and the first page of healthy ones.
      assertEquals(shownRows(first), ["bad-stale", ...names(0, HEALTHY_PAGE)]);
      assert(/<button type="button" id="prev" disabled="">/.test(first), "prev on page 1");
      const second = await chromium(`file://${page}#page=2`, "--dump-dom");
      assertEquals(
        shownRows(second),
        [...board.machines.slice(0, 4).map((m) => m.name), ...names(100, 200)],
      );
      assert(second.includes(`nodes 101–200 of 260 · page 2 of 3`), "no page line");
      const last = await chromium(`file://${page}#drift:clean&page=9`, "--dump-dom");
      // Past the end: the last page. Drift clean: the listed nodes with a clean drift verdict, and
      // 259 healthy ones (hx-008 never reconciled), so the third page is hx-201 ... hx-259.
      assertEquals(shownRows(last), [
        "bad-failed",
        "bad-refused",
        "bad-outstanding",
        ...healthy.filter((m) => m.name !== "hx-008").slice(200).map((m) => m.name),
      ]);
      assert(/<button type="button" id="next" disabled="">/.test(last), "next on the last page");
    });

    await t.step("a row the script renders is the markup nodeRow writes", async () => {
      const dom = await chromium(`file://${page}#find=hx-00`, "--dump-dom");
      // The same rows written by nodeRow, through the same browser's serialiser.
      const written = `${dir}/rows.html`;
      const some = healthy.slice(0, 10);
      await Deno.writeTextFile(
        written,
        `<!doctype html><meta charset="utf-8"><table><tbody>${
          some.map((m) => nodeRow(m, board.generatedAt)).join("")
        }</tbody></table>`,
      );
      const expected = rows(await chromium(`file://${written}`, "--dump-dom"));
      const got = rows(dom);
      assertEquals(got.length, 4 + 10);
      const markup = (r: Row) => [r.name, r.verdict, r.drift, r.attributes, flat(r.html)];
      assertEquals(got.slice(4).map(markup), expected.map(markup));
      // Including the hostile one and the one never reconciled.
      assert(expected[7]!.html.includes("&lt;/script&gt;&lt;script&gt;"), expected[7]!.html);
      assert(expected[8]!.html.includes("never reconciled"), expected[8]!.html);
    });

    await t.step("machine text cannot end the data block or become markup", async () => {
      const block = /<script type="application\/json" id="healthy-data">([^]*?)<\/script>/.exec(
        html,
      );
      assert(block, "no data block");
      // Nothing in it a parser could read as a tag, a comment or the block's end.
      assert(!/[<>&\u2028\u2029]/.test(block[1]!), "a raw <, >, & or line separator in the data");
      const data = JSON.parse(block[1]!) as { s: string[]; n: unknown[][] };
      assertEquals(data.n.length, 260);
      assert(data.s.some((s) => s.includes("</script><script>")), "the text is not carried whole");
      // Shown as the page shows it elsewhere: the disguising characters as <U+XXXX>.
      assert(data.s.some((s) => s.includes("<U+202E>")), "the override is not shown escaped");
      assert(!data.s.some((s) => /[\u2028\u202e]/.test(s)), "a disguising character is raw");
      const dom = await chromium(`file://${page}#find=hx-007`, "--dump-dom");
      assertEquals((dom.match(/<script\b/g) ?? []).length, 2, "a script element was injected");
      assert(!/<title>[^<]*owned/.test(dom), "the title changed");
      const row = rows(dom).find((r) => r.name === "hx-007")!;
      assert(row.html.includes("&lt;/script&gt;&lt;script&gt;document.title='owned'"), row.html);
      assert(row.html.includes("&lt;U+202E&gt;"), row.html);
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
