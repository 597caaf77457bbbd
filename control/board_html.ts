/**
 * `board --html FILE`: the board as one self-contained HTML page, rendered from the same gathered
 * {@linkcode Board} as `--json` and the text form (no read of its own). No network fetch, no
 * external asset: styles are inline, there is no image or font, and the only script is the page's
 * own (a filter by verdict, a search by name, and the list of the healthy nodes). Its
 * Content-Security-Policy allows that one style element and that one script element by their
 * sha256 hashes and nothing else inline (no `'unsafe-inline'`, no style attribute); the healthy
 * nodes' data is a `<script type="application/json">` data block, which is never run.
 *
 * Layout: the counts first (declaration verdicts, then drift verdicts), then one row per node that
 * `status` lists (not doing what it was told, away, or with a drift alarm: report.ts's
 * `statusMachines`), in the board's order, with both verdicts, last heard, how much applied and
 * the problems: rendered here as HTML, so they read without JavaScript. The rest (ok, and clean or
 * never reconciled) are summarised by count and carried as one compact JSON value
 * (`#healthy-data`: a table of distinct strings and one array per node); the page's script parses
 * it only when asked (the section opened, a search, a filter, an address naming one) and renders
 * one page of {@linkcode HEALTHY_PAGE} rows at a time, with the same markup as a row rendered here.
 * A fleet of 10,100 nodes is then about 1,600 rows of DOM instead of 10,100 (bench/README.md).
 *
 * All machine text (names, problems, paths, modules) is escaped, and what could disguise it
 * (bidirectional and other invisible or control characters) is shown as `<U+XXXX>`; in the JSON
 * value the same shown text is written with `<`, `>`, `&` and the line separators as `\uXXXX`
 * escapes (so no `</script>` or `<!--` can end or bend the data block), and the script only ever
 * sets it as text (`textContent`, attributes), never as markup. A node that never spoke or never
 * reconciled shows no time.
 *
 * Stable hooks for tests and scripts: `[data-count="declaration|drift"][data-verdict=V] .n`,
 * `tr[data-node][data-verdict][data-drift]`, `time[datetime]`, `#healthy[data-healthy=N]`, and
 * the address: `#FILTER` (`attention`, `verdict:V`, `drift:V`), `find=TEXT` and `page=N`, joined
 * by `&` (`board.html#drift:clean&find=web&page=2`).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { formatDuration } from "../lib/duration.ts";
import { printableText } from "../lib/printable.ts";
import { type Board, type BoardMachine, statusMachines } from "./report.ts";
import { isAlarm, type Verdict, VERDICT_WORDS, VERDICTS } from "./state.ts";
import {
  countsWords,
  DRIFT_VERDICTS,
  DRIFT_WORDS,
  type DriftVerdict,
  isDriftAlarm,
} from "./drift.ts";

/**
 * Escapes text for HTML element content and double- or single-quoted attribute values. Every
 * character that could disguise the text (controls other than tab and line feed, bidirectional
 * and other format characters, lib/printable.ts) is shown as `<U+XXXX>` first, so the page
 * displays `a<U+202E>b`, never a reordered or hidden text.
 */
export function escapeHtml(text: string): string {
  const shown = printableText(text);
  // Most machine text needs nothing more: one test, no copies.
  if (!/[&<>"']/.test(shown)) return shown;
  return shown.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const h = escapeHtml;

/** Tone of a verdict: how loudly the page shows it. */
type Tone = "bad" | "warn" | "quiet" | "good";

const VERDICT_TONE: Record<Verdict, Tone> = {
  "refused": "bad",
  "failed": "bad",
  "unknown-claim": "bad",
  "silent": "bad",
  "away": "quiet",
  "outstanding": "warn",
  "never-spoke": "quiet",
  "not-pushed": "quiet",
  "ok": "good",
};

const DRIFT_TONE: Record<DriftVerdict, Tone> = {
  "drift": "bad",
  "unreadable": "bad",
  "unobservable": "warn",
  "stale": "warn",
  "not-checked": "quiet",
  "clean": "good",
};

const STYLE = `
:root{--bg:#f6f7f9;--card:#fff;--ink:#1c2430;--mute:#5f6b7a;--line:#dfe3e8;
--bad:#b42318;--bad-bg:#fde8e6;--warn:#8a5a00;--warn-bg:#fff3d6;--good:#1a7f37;--good-bg:#e3f5e8;
--quiet:#4b5563;--quiet-bg:#eceff3}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header{padding:18px 28px 8px}
h1{font-size:20px;margin:0 0 2px}
.sub{color:var(--mute)}
main{padding:0 28px 28px}
.counts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:14px;margin:12px 0 18px}
.group{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.group h2{font-size:13px;text-transform:uppercase;letter-spacing:.05em;color:var(--mute);margin:0 0 8px}
.tiles{display:flex;flex-wrap:wrap;gap:8px}
.tile{min-width:92px;padding:8px 10px;border-radius:8px;border:1px solid var(--line);background:var(--card)}
.tile .n{display:block;font-size:24px;font-weight:650;line-height:1.1;font-variant-numeric:tabular-nums}
.tile .w{color:var(--mute);font-size:12px}
.tile.lit.bad{background:var(--bad-bg);border-color:#f4b4ad}.tile.lit.bad .n{color:var(--bad)}
.tile.lit.warn{background:var(--warn-bg);border-color:#f1d18a}.tile.lit.warn .n{color:var(--warn)}
.tile.lit.good .n{color:var(--good)}
.tile.zero .n{color:#a3acb8}
.summary{margin:0 0 12px;font-size:15px}
.summary b.bad{color:var(--bad)}
#filter{margin:0 0 10px;color:var(--mute)}
#filter select{font:inherit;padding:2px 4px;margin-left:4px}
table{width:100%;border-collapse:separate;border-spacing:0;background:var(--card);border:1px solid var(--line);border-radius:10px;overflow:hidden}
th,td{text-align:left;vertical-align:top;padding:8px 10px;border-bottom:1px solid var(--line)}
th{position:sticky;top:0;background:#eef1f5;font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--mute);z-index:1}
tr:last-child td{border-bottom:0}
tr.attn td:first-child{box-shadow:inset 3px 0 0 var(--bad)}
tr.soft td:first-child{box-shadow:inset 3px 0 0 #e0a100}
.name{font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
col.c-node{width:13%}col.c-decl{width:15%}col.c-drift{width:27%}col.c-heard{width:13%}col.c-prob{width:32%}
table{table-layout:fixed}
.applied{white-space:nowrap}
time{white-space:nowrap}
.sys,.meta{color:var(--mute);font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;white-space:nowrap}
.badge.bad{background:var(--bad-bg);color:var(--bad)}
.badge.warn{background:var(--warn-bg);color:var(--warn)}
.badge.good{background:var(--good-bg);color:var(--good)}
.badge.quiet{background:var(--quiet-bg);color:var(--quiet)}
.bar{display:inline-block;width:64px;height:6px;border-radius:3px;background:var(--quiet-bg);vertical-align:middle;margin-right:6px;overflow:hidden}
.bar i{display:block;height:100%;background:var(--good)}
${Array.from({ length: 101 }, (_, p) => `.bar i.p${p}{width:${p}%}`).join("")}
.bar.part i{background:var(--bad)}
.never{color:var(--mute);font-style:italic}
ul.problems{margin:0;padding-left:16px}
ul.problems li{word-break:break-word}
code{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;background:#f1f3f6;padding:0 3px;border-radius:3px;word-break:break-all}
footer{color:var(--mute);font-size:12px;padding:0 28px 24px}
details#healthy{margin-top:14px}
details#healthy>summary{cursor:pointer;padding:8px 0;font-size:15px;color:var(--good)}
details#healthy .kind{color:var(--mute);font-size:13px}
#problems+details#healthy{margin-top:18px}
.chunk{content-visibility:auto;contain-intrinsic-size:auto 3200px}
#problems .chunk table{border-radius:0}
#problems .chunk:not([hidden])~.chunk table{border-top:0}
#problems .chunk:first-child table{border-radius:10px 10px 0 0}
#problems .chunk:last-child table{border-radius:0 0 10px 10px}
#problems .chunk:only-child table{border-radius:10px}
#filter input{font:inherit;padding:2px 6px;margin-left:4px;width:14em}
.pager{margin:4px 0 10px;color:var(--mute)}
.pager button{font:inherit;padding:2px 10px}
@media print{#filter,.pager{display:none}th{position:static}}
`;

/** Rows of healthy nodes the page's script renders at a time (one page of the list). */
export const HEALTHY_PAGE = 100;

/**
 * The page's script (with no JavaScript none of it happens, and the page reads the same but for
 * the healthy nodes' list, which a `<noscript>` note says):
 * - the filter by verdict and the search by name, applied to the rendered rows (hidden, not
 *   removed) and to the healthy nodes' data;
 * - the healthy nodes' list: `#healthy-data` parsed the first time it is needed (the section
 *   opened, a filter or search given, an address naming one), then one page of rows at a time,
 *   built with DOM calls (`textContent`, `setAttribute`: machine text is never parsed as markup);
 * - the state kept in the address (`#drift:clean&find=web&page=2`), so a view can be linked.
 */
const SCRIPT = `(function () {
  var f = document.getElementById("filter");
  if (!f) return;
  f.hidden = false;
  var s = f.querySelector("select"), q = document.getElementById("find");
  var rows = document.querySelectorAll("#problems tbody tr");
  var d = document.getElementById("healthy"), blob = document.getElementById("healthy-data");
  var st = { v: "", find: "", page: 1 }, data = null, PAGE = ${HEALTHY_PAGE};
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function txt(e, text) { e.appendChild(document.createTextNode(text)); }
  function str(i) { return data.s[i]; }
  function when(e, iso, shown, ago) {
    var t = el("time", "", shown);
    t.setAttribute("datetime", iso);
    e.appendChild(t);
    if (ago) { txt(e, " "); e.appendChild(el("span", "meta", "\\u00b7 " + ago + " ago")); }
  }
  // One node's row, as board_html.ts's nodeRow() writes it, from its entry in #healthy-data
  // (healthyData): n is [name, heard, heard shown, heard ago, rest], rest (data.t) is [system,
  // verdict, words, tone, applied, total, meta, drift, drift words, drift tone, finding counts,
  // ran at, ran shown, ran ago, every, registry, trigger, quiet, [where, message, ...], problems
  // not shown]; strings are indexes into data.s (0: "", none).
  function row(n) {
    var r = data.t[n[4]], tr = el("tr"), c, e, a = r[4], t = r[5], p = r[18], i;
    var heard = typeof n[1] === "number" ? new Date(data.g - n[1]).toISOString() : n[1];
    tr.setAttribute("data-node", n[0]);
    tr.setAttribute("data-verdict", str(r[1]));
    tr.setAttribute("data-drift", str(r[7]));
    c = tr.appendChild(el("td"));
    c.appendChild(el("div", "name", n[0]));
    c.appendChild(el("div", "sys", str(r[0])));
    c = tr.appendChild(el("td"));
    c.appendChild(el("span", "badge " + str(r[3]), str(r[2])));
    e = c.appendChild(el("div", "applied"));
    if (t !== 0) {
      e.appendChild(el("span", a < t ? "bar part" : "bar")).appendChild(el("i", "p" + Math.round((a / t) * 100)));
    }
    var sp = e.appendChild(el("span", "", a + " of " + t));
    sp.setAttribute("data-applied", a);
    sp.setAttribute("data-total", t);
    txt(e, " applied");
    c.appendChild(el("div", "meta", str(r[6])));
    c = tr.appendChild(el("td"));
    c.appendChild(el("span", "badge " + str(r[9]), str(r[8])));
    if (r[10]) c.appendChild(el("div", "", str(r[10])));
    if (r[11]) {
      e = c.appendChild(el("div", "meta", "ran "));
      when(e, str(r[11]), str(r[12]), str(r[13]));
      txt(e, ", every " + str(r[14]));
    } else if (str(r[7]) === "not-checked") c.appendChild(el("div", "meta never", "never reconciled"));
    if (r[15]) {
      e = c.appendChild(el("div", "meta", "registry "));
      e.appendChild(el("code", "", str(r[15])));
    }
    c = tr.appendChild(el("td"));
    if (heard) {
      when(c, heard, str(n[2]), str(n[3]));
      if (r[16]) c.appendChild(el("div", "meta", str(r[16])));
      if (r[17]) c.appendChild(el("div", "meta", str(r[17])));
    } else c.appendChild(el("span", "never", "never spoke"));
    c = tr.appendChild(el("td"));
    if (p.length || r[19]) {
      e = c.appendChild(el("ul", "problems"));
      for (i = 0; i < p.length; i += 2) {
        var li = e.appendChild(el("li"));
        if (p[i]) { li.appendChild(el("code", "", str(p[i]))); txt(li, ": "); }
        txt(li, str(p[i + 1]));
      }
      if (r[19]) e.appendChild(el("li", "meta", "and " + r[19] + " more"));
    }
    return tr;
  }
  // Whether a node is shown: the filter (by verdict, by drift verdict, or needing attention)
  // and the search (a part of its name, any case).
  function wanted(verdict, drift, name, attention) {
    var v = st.v, k = v.split(":"), w = st.find.toLowerCase();
    return (v === "" || (k[0] === "attention" ? attention
      : (k[0] === "verdict" ? verdict : drift) === k[1])) &&
      (w === "" || name.toLowerCase().indexOf(w) >= 0);
  }
  // Renders the page asked of the healthy nodes that match; returns how many match.
  function render() {
    if (!d) return 0;
    if (!d.open) return st.v === "" && st.find === "" ? Number(d.getAttribute("data-healthy")) : 0;
    if (!data) data = JSON.parse(blob.textContent);
    var hit = [], i, n;
    for (i = 0; i < data.n.length; i++) {
      n = data.n[i];
      if (wanted(str(data.t[n[4]][1]), str(data.t[n[4]][7]), n[0], false)) hit.push(n);
    }
    var pages = Math.max(1, Math.ceil(hit.length / PAGE));
    st.page = Math.min(Math.max(1, st.page), pages);
    var body = document.getElementById("healthy-rows"), from = (st.page - 1) * PAGE;
    var fresh = document.createElement("tbody");
    fresh.id = "healthy-rows";
    hit.slice(from, from + PAGE).forEach(function (n) { fresh.appendChild(row(n)); });
    body.parentNode.replaceChild(fresh, body);
    document.getElementById("healthy-list").hidden = false;
    document.getElementById("healthy-table").hidden = hit.length === 0;
    document.getElementById("healthy-page").textContent = hit.length === 0
      ? "no healthy node matches"
      : "nodes " + (from + 1) + "\\u2013" + Math.min(from + PAGE, hit.length) + " of " + hit.length +
        " \\u00b7 page " + st.page + " of " + pages;
    document.getElementById("prev").disabled = st.page <= 1;
    document.getElementById("next").disabled = st.page >= pages;
    return hit.length;
  }
  function apply() {
    var shown = 0;
    rows.forEach(function (r) {
      var ok = wanted(r.getAttribute("data-verdict"), r.getAttribute("data-drift"),
        r.getAttribute("data-node"), r.hasAttribute("data-attention"));
      r.hidden = !ok;
      if (ok) shown++;
    });
    // A block with no row shown takes no room (not its placeholder height).
    document.querySelectorAll("#problems .chunk").forEach(function (c) {
      c.hidden = !c.querySelector("tbody tr:not([hidden])");
    });
    if (d && (st.v !== "" || st.find !== "" || st.page > 1)) d.open = true;
    shown += render();
    document.getElementById("shown").textContent = shown + " shown";
  }
  function keep() {
    var parts = [];
    if (st.v) parts.push(st.v);
    if (st.find) parts.push("find=" + encodeURIComponent(st.find));
    if (st.page > 1) parts.push("page=" + st.page);
    try {
      history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
    } catch (e) { /* a page opened where the address cannot change: the view still works */ }
  }
  s.addEventListener("change", function () { st.v = s.value; st.page = 1; apply(); keep(); });
  q.addEventListener("input", function () { st.find = q.value; st.page = 1; apply(); keep(); });
  if (d) {
    d.addEventListener("toggle", function () { if (d.open) render(); });
    document.getElementById("prev").addEventListener("click", function () { st.page--; render(); keep(); });
    document.getElementById("next").addEventListener("click", function () { st.page++; render(); keep(); });
  }
  // A view can be linked: board.html#drift:stale, #verdict:ok&find=web&page=2
  var asked = false;
  location.hash.slice(1).split("&").forEach(function (part) {
    var w;
    try { w = decodeURIComponent(part); } catch (e) { return; }
    if (w.indexOf("find=") === 0) { st.find = w.slice(5); asked = true; }
    else if (w.indexOf("page=") === 0) { st.page = parseInt(w.slice(5), 10) || 1; asked = true; }
    else if ([].some.call(s.options, function (o) { return o.value !== "" && o.value === w; })) {
      st.v = w;
      s.value = w;
      asked = true;
    }
  });
  q.value = st.find;
  if (asked) apply();
  else if (d && d.open) render();
})();`;

function tile(
  kind: "declaration" | "drift",
  verdict: string,
  words: string,
  n: number,
  tone: Tone,
) {
  return `<div class="tile ${tone}${n > 0 ? " lit" : " zero"}" data-count="${kind}" data-verdict="${
    h(verdict)
  }"><span class="n">${n}</span><span class="w">${h(words)}</span></div>`;
}

/** A time's parts as shown: UTC minutes, and how long before the board was gathered ("" if not known). */
function whenParts(iso: string, generatedAt: string, ageMs?: number): [string, string] {
  const age = ageMs ?? Date.parse(generatedAt) - Date.parse(iso);
  const shown = iso.replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC");
  return [shown, Number.isFinite(age) ? formatDuration(age) : ""];
}

/**
 * A time for people: the ISO instant in `datetime`, UTC minutes, and how long before the board
 * was gathered (`ageMs`, or the difference of the two instants when not given).
 */
function when(iso: string, generatedAt: string, ageMs?: number): string {
  const [shown, ago] = whenParts(iso, generatedAt, ageMs);
  return `<time datetime="${h(iso)}">${h(shown)}</time>${
    ago ? ` <span class="meta">· ${h(ago)} ago</span>` : ""
  }`;
}

/** The declaration's generation and the modules, in words (the meta line under the verdict). */
function declarationMeta(m: BoardMachine): string {
  const gen = m.generation !== undefined
    ? `generation ${m.generation}${
      m.reportedGeneration !== undefined && m.reportedGeneration !== m.generation
        ? `, reported ${m.reportedGeneration}`
        : ""
    }`
    : "never pushed";
  return `${gen}${m.modules.length ? ` · ${m.modules.join(", ")}` : ""}`;
}

/** Why a node that spoke is quiet past its allowance, in words ("" when it is not). */
function quietWords(m: BoardMachine): string {
  return m.overdue
    ? `quiet past ${formatDuration(m.quietAllowedMs ?? 0)} (reports every ${
      formatDuration(m.intervalMs ?? 0)
    })`
    : "";
}

function declarationCell(m: BoardMachine): string {
  const tone = VERDICT_TONE[m.verdict];
  const pct = m.total === 0 ? 0 : Math.round((m.applied / m.total) * 100);
  const bar = m.total === 0
    ? ""
    : `<span class="bar${m.applied < m.total ? " part" : ""}"><i class="p${pct}"></i></span>`;
  return `<span class="badge ${tone}">${
    h(m.words)
  }</span><div class="applied">${bar}<span data-applied="${m.applied}" data-total="${m.total}">${m.applied} of ${m.total}</span> applied</div><div class="meta">${
    h(declarationMeta(m))
  }</div>`;
}

function driftCell(m: BoardMachine, generatedAt: string): string {
  const d = m.drift;
  const parts = [`<span class="badge ${DRIFT_TONE[d.verdict]}">${h(d.words)}</span>`];
  if (d.counts.length > 0) {
    parts.push(`<div>${h(countsWords(d.counts))}</div>`);
  }
  if (d.verdict === "stale" && d.last !== undefined) {
    parts.push(`<div class="meta">last result: ${h(d.last)}</div>`);
  }
  if (d.ranAt !== undefined) {
    parts.push(
      `<div class="meta">ran ${when(d.ranAt, generatedAt, (d.ageSeconds ?? 0) * 1000)}, every ${
        h(formatDuration((d.intervalSeconds ?? 0) * 1000))
      }</div>`,
    );
  } else if (d.verdict === "not-checked") {
    parts.push(`<div class="meta never">never reconciled</div>`);
  }
  if (d.registry !== undefined) {
    parts.push(`<div class="meta">registry <code>${h(d.registry)}</code></div>`);
  }
  return parts.join("");
}

function problemsCell(m: BoardMachine): string {
  const items: string[] = [];
  if (m.claim !== undefined) items.push(`<li>unknown claim: ${h(m.claim)}</li>`);
  for (const p of m.problems.slice(0, 3)) {
    const where = p.id ?? p.path;
    items.push(`<li>${where ? `<code>${h(where)}</code>: ` : ""}${h(p.message)}</li>`);
  }
  if (m.problems.length > 3) items.push(`<li class="meta">and ${m.problems.length - 3} more</li>`);
  const d = m.drift;
  if (d.verdict === "unreadable") {
    items.push(
      `<li>reconcile result <code>${h(d.path ?? "")}</code> unreadable: ${h(d.problem ?? "")}</li>`,
    );
  }
  if (d.unobserved?.length) {
    items.push(`<li>could not observe ${h(d.unobserved.join(", "))}</li>`);
  }
  return items.length ? `<ul class="problems">${items.join("")}</ul>` : "";
}

/** The healthy nodes' section is open (its list rendered at once) up to this many of them. */
const OPEN_HEALTHY = 50;

const TABLE_HEAD =
  `<colgroup><col class="c-node"><col class="c-decl"><col class="c-drift"><col class="c-heard"><col class="c-prob"></colgroup>
<thead><tr><th>Node</th><th>Declaration</th><th>Drift</th><th>Last heard</th><th>Problems</th></tr></thead>`;

/**
 * Rows of the listed nodes per block: each block its own table (with its own sticky head, so a
 * filter that hides the first block hides no head) in a `.chunk` whose `content-visibility: auto`
 * lets the browser skip style and layout of the blocks off screen (a table is laid out whole, and
 * laying out 1,600 rows was most of the page's cost).
 */
export const PROBLEM_CHUNK = 40;

function table(machines: BoardMachine[], generatedAt: string): string {
  if (machines.length === 0) return "";
  const chunks: string[] = [];
  for (let i = 0; i < machines.length; i += PROBLEM_CHUNK) {
    chunks.push(`<div class="chunk"><table>
${TABLE_HEAD}
<tbody>
${machines.slice(i, i + PROBLEM_CHUNK).map((m) => nodeRow(m, generatedAt)).join("\n")}
</tbody>
</table></div>`);
  }
  return `<div id="problems">
${chunks.join("\n")}
</div>`;
}

/** A JSON text safe inside a `<script>` data block: no `<`, `>`, `&` or line separator raw. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * The healthy nodes' data for the page's script: `{g, s, t, n}`. `g` is when the board was
 * gathered (ms since the epoch); `s` every distinct piece of text once (as shown: disguising
 * characters as `<U+XXXX>`; `s[0]` is ""); `t` the distinct rests of a row (most healthy nodes
 * share one), each an array of indexes into `s` and numbers; `n` one array per node:
 * `[name, heard, heard shown, heard ago, rest]`, where heard is how many ms before `g` the node
 * was last heard (its ISO instant when that does not round-trip, "" when it never spoke). The
 * script's `row` reads them in this order (SCRIPT). The pieces are made by the same functions as
 * {@linkcode nodeRow}'s. A healthy node's verdict is `ok` and its drift verdict `clean` or
 * `not-checked`, so it has no claim, no unreadable result and nothing unobserved (the cells that
 * would show them are not carried). About 30 bytes a node.
 */
function healthyData(machines: BoardMachine[], generatedAt: string): string {
  const strings: string[] = [""];
  const index = new Map<string, number>([["", 0]]);
  const s = (text: string | undefined): number => {
    const shown = printableText(text ?? "");
    let i = index.get(shown);
    if (i === undefined) {
      i = strings.length;
      strings.push(shown);
      index.set(shown, i);
    }
    return i;
  };
  const rests: (number | number[])[][] = [];
  const restIndex = new Map<string, number>();
  const g = Date.parse(generatedAt);
  const nodes = machines.map((m) => {
    const d = m.drift;
    const [ranShown, ranAgo] = d.ranAt !== undefined
      ? whenParts(d.ranAt, generatedAt, (d.ageSeconds ?? 0) * 1000)
      : ["", ""];
    const problems = m.problems.slice(0, 3).flatMap((p) => [s(p.id ?? p.path), s(p.message)]);
    const rest = [
      s(`${m.system} · ${m.kind}`),
      s(m.verdict),
      s(m.words),
      s(VERDICT_TONE[m.verdict]),
      m.applied,
      m.total,
      s(declarationMeta(m)),
      s(d.verdict),
      s(d.words),
      s(DRIFT_TONE[d.verdict]),
      s(d.counts.length > 0 ? countsWords(d.counts) : ""),
      s(d.ranAt),
      s(ranShown),
      s(ranAgo),
      s(d.ranAt !== undefined ? formatDuration((d.intervalSeconds ?? 0) * 1000) : ""),
      s(d.registry),
      s(m.trigger),
      s(quietWords(m)),
      problems,
      Math.max(0, m.problems.length - 3),
    ];
    const key = JSON.stringify(rest);
    let r = restIndex.get(key);
    if (r === undefined) {
      r = rests.length;
      rests.push(rest);
      restIndex.set(key, r);
    }
    const at = m.lastReportAt;
    if (at === undefined) return [printableText(m.name), "", 0, 0, r];
    const [shown, ago] = whenParts(at, generatedAt);
    const t = Date.parse(at);
    const heard = Number.isFinite(t) && Number.isFinite(g) && new Date(t).toISOString() === at
      ? g - t
      : printableText(at);
    return [printableText(m.name), heard, s(shown), s(ago), r];
  });
  return scriptJson({ g, s: strings, t: rests, n: nodes });
}

/**
 * One node's table row (`<tr data-node data-verdict data-drift>` and its five cells), as the page
 * shows a node `status` lists; the page's script builds the same markup for a healthy node from
 * {@linkcode healthyData}'s entry (tests/control/board_html_test.ts holds the two equal).
 */
export function nodeRow(m: BoardMachine, generatedAt: string): string {
  const attn = m.verdict === "refused" || m.verdict === "failed" || m.verdict === "silent" ||
    m.verdict === "unknown-claim" ||
    m.drift.verdict === "drift" || m.drift.verdict === "unreadable";
  const soft = !attn &&
    (m.verdict === "outstanding" || m.drift.verdict === "stale" ||
      m.drift.verdict === "unobservable");
  const heard = m.lastReportAt !== undefined
    ? `${when(m.lastReportAt, generatedAt)}${
      m.trigger ? `<div class="meta">${h(m.trigger)}</div>` : ""
    }${m.overdue ? `<div class="meta">${h(quietWords(m))}</div>` : ""}`
    : `<span class="never">never spoke</span>`;
  const attention = m.verdict !== "ok" || isDriftAlarm(m.drift.verdict);
  return `<tr data-node="${h(m.name)}" data-verdict="${h(m.verdict)}" data-drift="${
    h(m.drift.verdict)
  }"${attention ? " data-attention" : ""}${
    attn ? ' class="attn"' : soft ? ' class="soft"' : ""
  }><td><div class="name">${h(m.name)}</div><div class="sys">${h(m.system)} · ${
    h(m.kind)
  }</div></td><td>${declarationCell(m)}</td><td>${
    driftCell(m, generatedAt)
  }</td><td>${heard}</td><td>${problemsCell(m)}</td></tr>`;
}

/** `'sha256-BASE64'`: a CSP hash source of exactly `text` (UTF-8). */
function hashSource(text: string): string {
  return `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
}

/**
 * The page's Content-Security-Policy: nothing from anywhere (`default-src 'none'`), and of inline
 * code only the one style element and the one script element the page carries, by their hashes
 * computed here from the very text written between their tags; no `'unsafe-inline'`, and no
 * inline style attribute or handler (the page has none), so text that got past the escaping still
 * could not run or restyle the page.
 */
function boardPolicy(style: string, script: string): string {
  return [
    "default-src 'none'",
    `style-src ${hashSource(style)}`,
    `script-src ${hashSource(script)}`,
    "img-src 'none'",
    "connect-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

/**
 * Renders the board as one self-contained HTML page (UTF-8). Pure: the same board gives the same
 * page.
 */
export function boardHtml(board: Board): string {
  const { generatedAt } = board;
  const declTiles = VERDICTS.map((v) =>
    tile("declaration", v, VERDICT_WORDS[v], board.counts[v], VERDICT_TONE[v])
  ).join("");
  const driftTiles = DRIFT_VERDICTS.map((v) =>
    tile("drift", v, DRIFT_WORDS[v], board.driftCounts[v], DRIFT_TONE[v])
  ).join("");
  const behind = board.machines.filter((m) => isAlarm(m.verdict)).length;
  const alarms = board.driftCounts.drift + board.driftCounts.unobservable +
    board.driftCounts.unreadable + board.driftCounts.stale;
  const options = [
    `<option value="">every node</option>`,
    `<option value="attention">needs attention</option>`,
    ...VERDICTS.map((v) =>
      `<option value="verdict:${v}">declaration: ${h(VERDICT_WORDS[v])}</option>`
    ),
    ...DRIFT_VERDICTS.map((v) => `<option value="drift:${v}">drift: ${h(DRIFT_WORDS[v])}</option>`),
  ].join("");
  // The nodes status lists come first, rendered here (they read without JavaScript); the rest,
  // doing what they were told with no drift alarm, are counted and carried as data, listed by the
  // script a page at a time when asked: closed on a large fleet, open on a small one.
  const problems = statusMachines(board);
  const listed = new Set(problems);
  const healthy = board.machines.filter((m) => !listed.has(m));
  const kinds = new Map<string, { verdict: string; drift: string; words: string; n: number }>();
  for (const m of healthy) {
    const key = `${m.verdict} ${m.drift.verdict}`;
    const k = kinds.get(key);
    if (k) k.n++;
    else {
      kinds.set(key, {
        verdict: m.verdict,
        drift: m.drift.verdict,
        words: `${m.words}, ${m.drift.words}`,
        n: 1,
      });
    }
  }
  const healthyCounts = [...kinds.values()].map((k) =>
    `<span class="kind" data-verdict="${h(k.verdict)}" data-drift="${h(k.drift)}"><b>${k.n}</b> ${
      h(k.words)
    }</span>`
  ).join(" · ");
  const body = board.nodes === 0
    ? `<p class="summary">No nodes enrolled.</p>`
    : `<p class="summary" id="summary"><b class="${
      behind ? "bad" : ""
    }">${behind}</b> of ${board.nodes} nodes not doing what they were told · <b class="${
      alarms ? "bad" : ""
    }">${alarms}</b> with a drift alarm</p>
<div id="filter" hidden><label>Show <select>${options}</select></label> <label>Find <input type="search" id="find" placeholder="part of a name" autocomplete="off"></label> <span id="shown">${board.nodes} shown</span></div>
${table(problems, generatedAt)}
${
      healthy.length === 0
        ? ""
        : `<details id="healthy" data-healthy="${healthy.length}"${
          healthy.length <= OPEN_HEALTHY ? " open" : ""
        }>
<summary><b>${healthy.length}</b> doing what they were told, no drift alarm: ${healthyCounts}</summary>
<noscript><p class="meta">Listing these nodes needs JavaScript (the page carries them as data); <code>mesh-control board --json</code> lists every node.</p></noscript>
<div id="healthy-list" hidden>
<div class="pager"><button type="button" id="prev">previous</button> <span id="healthy-page"></span> <button type="button" id="next">next</button></div>
<table id="healthy-table">
${TABLE_HEAD}
<tbody id="healthy-rows"></tbody>
</table>
</div>
</details>
<script type="application/json" id="healthy-data">${healthyData(healthy, generatedAt)}</script>`
    }`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${boardPolicy(STYLE, SCRIPT)}">
<title>mesh board · ${board.nodes} node${board.nodes === 1 ? "" : "s"}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>mesh board</h1>
<div class="sub">${board.nodes} node${board.nodes === 1 ? "" : "s"} · gathered <time datetime="${
    h(generatedAt)
  }">${
    h(generatedAt.replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC"))
  }</time></div>
</header>
<main>
<section class="counts" aria-label="counts">
<div class="group"><h2>Declaration: is it what it was told?</h2><div class="tiles">${declTiles}</div></div>
<div class="group"><h2>Drift: does it run anything undeclared?</h2><div class="tiles">${driftTiles}</div></div>
</section>
${body}
</main>
<footer>Rendered by mesh-control board --html from the same reads as board --json. Findings stay on each node; run <code>mesh-reconcile run</code> there to see them.</footer>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
