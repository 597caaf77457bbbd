/**
 * `board --html FILE`: the board as one self-contained HTML page, rendered from the same gathered
 * {@linkcode Board} as `--json` and the text form (no read of its own). No network fetch, no
 * external asset: styles are inline, there is no image or font, and the only script is a small
 * filter by verdict; without JavaScript every node is shown and the page reads the same. Its
 * Content-Security-Policy allows that one style element and that one script element by their
 * sha256 hashes and nothing else inline (no `'unsafe-inline'`, no style attribute).
 *
 * Layout: the counts first (declaration verdicts, then drift verdicts), then one row per node in
 * the board's order (the machines not doing what they were told first) with both verdicts, last
 * heard, how much applied and the problems. All machine text (names, problems, paths, modules)
 * is escaped, and what could disguise it (bidirectional and other invisible or control
 * characters) is shown as `<U+XXXX>`; a node that never spoke or never reconciled shows no time.
 *
 * Stable hooks for tests and scripts: `[data-count="declaration|drift"][data-verdict=V] .n`,
 * `tr[data-node][data-verdict][data-drift]`, `time[datetime]`.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { formatDuration } from "../lib/duration.ts";
import { printableText } from "../lib/printable.ts";
import type { Board, BoardMachine } from "./report.ts";
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
table+details#healthy{margin-top:18px}
@media print{#filter{display:none}th{position:static}}
`;

/** The filter: shows rows whose verdict matches; with no JavaScript it never appears. */
const SCRIPT = `(function () {
  var f = document.getElementById("filter");
  if (!f) return;
  f.hidden = false;
  var s = f.querySelector("select"), rows = document.querySelectorAll("tbody tr");
  function apply() {
    var v = s.value, k = v.split(":"), shown = 0, d = document.getElementById("healthy");
    if (d && v !== "") d.open = true;
    rows.forEach(function (r) {
      var ok = v === "" || (k[0] === "attention" ? r.hasAttribute("data-attention")
        : r.getAttribute("data-" + k[0]) === k[1]);
      r.hidden = !ok;
      if (ok) shown++;
    });
    document.getElementById("shown").textContent = shown + " shown";
  }
  s.addEventListener("change", function () {
    try {
      history.replaceState(null, "", s.value ? "#" + s.value : location.pathname);
    } catch (e) { /* a page opened where the address cannot change: the filter still works */ }
    apply();
  });
  // A filtered view can be linked: board.html#drift:stale
  var want = decodeURIComponent(location.hash.slice(1));
  if ([].some.call(s.options, function (o) { return o.value !== "" && o.value === want; })) {
    s.value = want;
    apply();
  }
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

/**
 * A time for people: the ISO instant in `datetime`, UTC minutes, and how long before the board
 * was gathered (`ageMs`, or the difference of the two instants when not given).
 */
function when(iso: string, generatedAt: string, ageMs?: number): string {
  const age = ageMs ?? Date.parse(generatedAt) - Date.parse(iso);
  const shown = iso.replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC");
  return `<time datetime="${h(iso)}" title="${h(iso)}">${h(shown)}</time>${
    Number.isFinite(age) ? ` <span class="meta">· ${h(formatDuration(age))} ago</span>` : ""
  }`;
}

function declarationCell(m: BoardMachine): string {
  const tone = VERDICT_TONE[m.verdict];
  const pct = m.total === 0 ? 0 : Math.round((m.applied / m.total) * 100);
  const bar = m.total === 0
    ? ""
    : `<span class="bar${
      m.applied < m.total ? " part" : ""
    }" role="img" aria-label="${pct}% applied"><i class="p${pct}"></i></span>`;
  const gen = m.generation !== undefined
    ? `generation ${m.generation}${
      m.reportedGeneration !== undefined && m.reportedGeneration !== m.generation
        ? `, reported ${m.reportedGeneration}`
        : ""
    }`
    : "never pushed";
  return `<span class="badge ${tone}">${h(m.words)}</span>
<div class="applied">${bar}<span data-applied="${m.applied}" data-total="${m.total}">${m.applied} of ${m.total}</span> applied</div>
<div class="meta">${h(gen)}${m.modules.length ? ` · ${h(m.modules.join(", "))}` : ""}</div>`;
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
  return parts.join("\n");
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

/** Healthy nodes are shown open up to this many; more are a closed section. */
const OPEN_HEALTHY = 50;

function table(machines: BoardMachine[], generatedAt: string): string {
  if (machines.length === 0) return "";
  return `<table>
<colgroup><col class="c-node"><col class="c-decl"><col class="c-drift"><col class="c-heard"><col class="c-prob"></colgroup>
<thead><tr><th>Node</th><th>Declaration</th><th>Drift</th><th>Last heard</th><th>Problems</th></tr></thead>
<tbody>
${machines.map((m) => row(m, generatedAt)).join("\n")}
</tbody>
</table>`;
}

function row(m: BoardMachine, generatedAt: string): string {
  const attn = m.verdict === "refused" || m.verdict === "failed" || m.verdict === "silent" ||
    m.verdict === "unknown-claim" ||
    m.drift.verdict === "drift" || m.drift.verdict === "unreadable";
  const soft = !attn &&
    (m.verdict === "outstanding" || m.drift.verdict === "stale" ||
      m.drift.verdict === "unobservable");
  const heard = m.lastReportAt !== undefined
    ? `${when(m.lastReportAt, generatedAt)}${
      m.trigger ? `<div class="meta">${h(m.trigger)}</div>` : ""
    }${
      m.overdue
        ? `<div class="meta">quiet past ${
          h(formatDuration(m.quietAllowedMs ?? 0))
        } (reports every ${h(formatDuration(m.intervalMs ?? 0))})</div>`
        : ""
    }`
    : `<span class="never">never spoke</span>`;
  const attention = m.verdict !== "ok" || isDriftAlarm(m.drift.verdict);
  return `<tr data-node="${h(m.name)}" data-verdict="${h(m.verdict)}" data-drift="${
    h(m.drift.verdict)
  }"${attention ? " data-attention" : ""}${attn ? ' class="attn"' : soft ? ' class="soft"' : ""}>
<td><div class="name">${h(m.name)}</div><div class="sys">${h(m.system)} · ${h(m.kind)}</div></td>
<td>${declarationCell(m)}</td>
<td>${driftCell(m, generatedAt)}</td>
<td class="heard">${heard}</td>
<td>${problemsCell(m)}</td>
</tr>`;
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
  // The nodes doing what they were told and clean go last, in a section of their own: closed on
  // a large fleet (a browser then lays out only the rows that need someone), open on a small one.
  const attention = board.machines.filter((m) =>
    !(m.verdict === "ok" && m.drift.verdict === "clean")
  );
  const healthy = board.machines.filter((m) => m.verdict === "ok" && m.drift.verdict === "clean");
  const body = board.nodes === 0
    ? `<p class="summary">No nodes enrolled.</p>`
    : `<p class="summary" id="summary"><b class="${
      behind ? "bad" : ""
    }">${behind}</b> of ${board.nodes} nodes not doing what they were told · <b class="${
      alarms ? "bad" : ""
    }">${alarms}</b> with a drift alarm</p>
<div id="filter" hidden><label>Show <select>${options}</select></label> <span id="shown">${board.nodes} shown</span></div>
${table(attention, generatedAt)}
${
      healthy.length === 0
        ? ""
        : `<details id="healthy"${healthy.length <= OPEN_HEALTHY ? " open" : ""}>
<summary><b>${healthy.length}</b> doing what they were told, and clean</summary>
${table(healthy, generatedAt)}
</details>`
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
