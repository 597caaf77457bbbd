/**
 * The remote watcher against the real `stamp serve` over HTTP: `mesh-reconcile stamp serve` and
 * `mesh-reconcile watch` run as subprocesses, as an operator (or a timer) runs them. The webhook
 * receiver is a real HTTP server in this process. Only the clock test calls the watcher as a
 * library, to give it a clock that is wrong.
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { freePort, reconcileCli, ROOT } from "../support/mod.ts";
import { type StampServe, startStampServe } from "../support/stamp_serve.ts";
import { DEFAULT_STAMP_PATH, parseStamp, ServedStamp } from "../../reconcile/stamp.ts";
import { watch, WatchStateFile, WebhookBody } from "../../reconcile/watch.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A stamp line as `run` writes it, dated `agoMs` before now. */
function stampLine(agoMs: number): string {
  return `${
    new Date(Date.now() - agoMs).toISOString()
  } clean: 3 entries agree with 1 containers, 2 ports, 0 addresses\n`;
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `mesh-reconcile ARGS`, killed (and failing the test) if it runs longer than `deadlineMs`. */
async function cli(args: string[], deadlineMs = 30_000): Promise<CliResult> {
  const started = Date.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}reconcile/main.ts`, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(deadlineMs),
  }).output();
  const ms = Date.now() - started;
  assert(out.signal === null, `mesh-reconcile ${args.join(" ")} was killed after ${ms}ms`);
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
    ms,
  };
}

interface WatchJson {
  source: string;
  state: string;
  problem?: string;
  exitCode: number;
  detail: string;
  ageSeconds?: number;
  ageFrom?: string;
  stampedAt?: string;
  memory?: { transition: boolean; previous?: { state: string } };
  notify?: { url: string; delivered: number; owed: number; error?: string };
  ownStamp?: { path: string; state: string; detail: string };
}

/** `watch SOURCE ... --json`; the exit code must be the one the JSON states. */
async function watchJson(
  source: string,
  args: string[],
  deadlineMs?: number,
): Promise<{ r: CliResult; j: WatchJson }> {
  const r = await cli(["watch", source, ...args, "--json"], deadlineMs);
  let j: WatchJson;
  try {
    j = JSON.parse(r.stdout);
  } catch {
    throw new Error(`watch printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
  assertEquals(j.exitCode, r.code, r.stdout + r.stderr);
  return { r, j };
}

/** `stamp serve --listen 127.0.0.1:PORT --stamp STAMP` (a free port unless given), listening. */
function startServe(stamp: string, port?: number): Promise<StampServe> {
  return startStampServe(stamp, port === undefined ? {} : { listen: `127.0.0.1:${port}` });
}

/** A webhook receiver: records each body it accepts; answers 503 while failing. */
function startWebhook() {
  const accepted: WebhookBody[] = [];
  let failing = false;
  let attempts = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    attempts++;
    const body = await req.json();
    if (failing) return new Response("not now", { status: 503 });
    accepted.push(WebhookBody.parse(body));
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook?token=s3cret`,
    accepted,
    attempts: () => attempts,
    fail(on: boolean) {
      failing = on;
    },
    close: () => server.shutdown(),
  };
}

async function readState(path: string): Promise<WatchStateFile> {
  return WatchStateFile.parse(JSON.parse(await Deno.readTextFile(path)));
}

const servers = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name: "stamp serve answers the stamp read-only: / and /stamp, HEAD, 405, 404, no traversal",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    await Deno.writeTextFile(`${dir}/secret`, "not for you\n");
    const stamp = `${dir}/stamp`;
    const line = stampLine(MINUTE);
    await Deno.writeTextFile(stamp, line);
    const serve = await startServe(stamp);
    try {
      for (const path of ["", "stamp", "?x=1"]) {
        const r = await fetch(serve.url + path);
        assertEquals(r.status, 200);
        assertEquals(r.headers.get("content-type"), "application/json; charset=utf-8");
        assertEquals(r.headers.get("cache-control"), "no-store");
        const body = ServedStamp.parse(await r.json());
        assert(body.state === "stamped", JSON.stringify(body));
        assertEquals(body.stamp + "\n", await Deno.readTextFile(stamp));
        assertEquals(body.stampedAt, (await Deno.readTextFile(stamp)).slice(0, 24));
        assert(body.ageSeconds >= 59 && body.ageSeconds < 90, String(body.ageSeconds));
      }
      const head = await fetch(serve.url, { method: "HEAD" });
      assertEquals(head.status, 200);
      assertEquals(await head.text(), "");
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const r = await fetch(serve.url, { method, body: "x" });
        assertEquals(r.status, 405, method);
        assertEquals(r.headers.get("allow"), "GET, HEAD");
        assertStringIncludes((await r.json()).error, "only reads");
      }
      assertEquals(await Deno.readTextFile(stamp), line, "read-only: the stamp is untouched");
      // The request path never reaches the file system: raw paths, sent as written.
      for (const path of ["/../secret", "/stamp/../../secret", "/%2e%2e/secret", "/secret"]) {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port: serve.port });
        await conn.write(
          new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
        );
        let raw = "";
        const buf = new Uint8Array(4096);
        for (;;) {
          const n = await conn.read(buf);
          if (n === null) break;
          raw += new TextDecoder().decode(buf.subarray(0, n));
        }
        conn.close();
        assert(!raw.includes("not for you"), `${path} served another file:\n${raw}`);
        assert(!raw.startsWith("HTTP/1.1 200"), `${path}:\n${raw}`);
      }
    } finally {
      await serve.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch: fresh is up, old is late, very old is down, by URL and by file, each its own code",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    await Deno.writeTextFile(stamp, stampLine(10_000));
    const serve = await startServe(stamp);
    const limits = ["--max-age", "1h", "--grace", "1h"];
    try {
      const cases: [number, string, number][] = [
        [10_000, "up", 0],
        [HOUR - MINUTE, "up", 0],
        [HOUR + 5 * MINUTE, "late", 4],
        [2 * HOUR - MINUTE, "late", 4],
        [2 * HOUR + 5 * MINUTE, "down", 5],
        [30 * 24 * HOUR, "down", 5],
      ];
      for (const [ago, state, code] of cases) {
        await Deno.writeTextFile(stamp, stampLine(ago));
        for (const source of [serve.url, stamp]) {
          const { r, j } = await watchJson(source, limits);
          assertEquals([j.state, r.code], [state, code], `${source} ${ago}ms: ${r.stdout}`);
          assertEquals(j.problem, undefined);
          assertEquals(j.ageFrom, source === stamp ? "this machine" : "server");
          assert(Math.abs(j.ageSeconds! - ago / 1000) < 30, `${j.ageSeconds} vs ${ago / 1000}`);
        }
      }
      // Words, in the text form.
      await Deno.writeTextFile(stamp, stampLine(HOUR + 5 * MINUTE));
      const late = await cli(["watch", serve.url, ...limits]);
      assertEquals(late.code, 4);
      assertMatch(late.stdout, /: late: stamp 1h 5m old .* past max-age 1h, within grace 1h/);
      // Without --grace there is no late: past max-age is down.
      const noGrace = await watchJson(serve.url, ["--max-age", "1h"]);
      assertEquals([noGrace.j.state, noGrace.r.code], ["down", 5]);
      const help = await cli(["watch", "--help"]);
      assertStringIncludes(help.stdout, " 0  the stamp is up");
      assertStringIncludes(help.stdout, " 3  new: never stamped");
      assertStringIncludes(help.stdout, " 4  late");
      assertStringIncludes(help.stdout, " 5  down");
      assertStringIncludes(help.stdout, " 6  unreachable");
    } finally {
      await serve.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch: never stamped is new (exit 3); a stamp directory that does not exist is not new",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    const serve = await startServe(stamp);
    try {
      const served = await fetch(serve.url);
      assertEquals(served.status, 200);
      const body = ServedStamp.parse(await served.json());
      assertEquals(body.state, "never");
      for (const source of [serve.url, stamp]) {
        const { r, j } = await watchJson(source, ["--max-age", "1h"]);
        assertEquals([j.state, r.code], ["new", 3], r.stdout);
        assertEquals(j.ageSeconds, undefined);
      }
      const text = await cli(["watch", stamp, "--max-age", "1h"]);
      assertStringIncludes(text.stdout, `: new: no stamp at "${stamp}"`);
      // A missing directory is a misconfiguration, not "never stamped".
      const { r, j } = await watchJson(`${dir}/nowhere/stamp`, ["--max-age", "1h"]);
      assertEquals([j.state, j.problem, r.code], ["unreachable", "cannot-read", 6]);
      assertStringIncludes(j.detail, "does not exist");
    } finally {
      await serve.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch: a stamp holding garbage is unreachable (garbage), served as 500, never up",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    await Deno.writeTextFile(stamp, stampLine(0));
    const serve = await startServe(stamp);
    const now = new Date().toISOString();
    const garbage: [string, string | Uint8Array, string][] = [
      ["empty", "", "empty"],
      ["words", "all good\n", "is not"],
      ["not UTF-8", new Uint8Array([0xff, 0xfe, 0x00, 0x41]), "not UTF-8"],
      ["two lines", stampLine(0) + stampLine(0), "2 lines"],
      ["an impossible time", "2026-02-30T00:00:00.000Z clean: x\n", "not a real time"],
      ["an unknown kind", `${now} drift: 3 findings\n`, "is not"],
      ["a control character", `${now} clean: a\x1b[2Jb\n`, "control characters"],
      ["too large", `${now} clean: ${"x".repeat(5000)}\n`, "larger than"],
      ["a time in the future", stampLine(-24 * HOUR), "ahead of this machine's clock"],
      ["another file", "root:$y$j9T$hashofsecret:19000:0:99999:7:::\n", "is not"],
    ];
    try {
      for (const [what, content, words] of garbage) {
        if (typeof content === "string") await Deno.writeTextFile(stamp, content);
        else await Deno.writeFile(stamp, content);
        const served = await fetch(serve.url);
        assertEquals(served.status, 500, what);
        const body = ServedStamp.parse(await served.json());
        assert(body.state === "error" && body.problem === "garbage", `${what}: ${body.state}`);
        assertStringIncludes(body.reason, words, what);
        // What the file holds is never served: a stamp path pointed at the wrong file leaks none.
        for (const piece of ["hashofsecret", "root:", "all good"]) {
          assert(!JSON.stringify(body).includes(piece), `${what}: served "${piece}"`);
        }
        for (const source of [serve.url, stamp]) {
          const { r, j } = await watchJson(source, ["--max-age", "100d", "--grace", "100d"]);
          assertEquals([j.state, j.problem, r.code], ["unreachable", "garbage", 6], what);
          assertStringIncludes(j.detail, words, what);
          assertStringIncludes(j.detail, "garbage", what);
          // The operator reading a file here sees how it starts.
          if (source === stamp && what === "another file") {
            assertStringIncludes(j.detail, "hashofsecret");
          }
        }
      }
      const text = await cli(["watch", stamp, "--max-age", "1h"]);
      assertStringIncludes(text.stdout, ": unreachable (garbage): ");
      // A stamp that cannot be read at all is not garbage: a different problem, said.
      await Deno.remove(stamp);
      await Deno.mkdir(stamp);
      const served = await fetch(serve.url);
      assertEquals(served.status, 500);
      assertEquals((await served.json()).problem, "cannot-read");
      for (const source of [serve.url, stamp]) {
        const { r, j } = await watchJson(source, ["--max-age", "1h"]);
        assertEquals([j.state, j.problem, r.code], ["unreachable", "cannot-read", 6]);
      }
    } finally {
      await serve.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch: the age is the stamp's own time, not its mtime: a touched old stamp is still down",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    await Deno.writeTextFile(stamp, stampLine(5 * HOUR));
    const now = new Date();
    await Deno.utime(stamp, now, now); // `touch`, or a copy that did not keep times
    const serve = await startServe(stamp);
    try {
      for (const source of [serve.url, stamp]) {
        const { r, j } = await watchJson(source, ["--max-age", "1h", "--grace", "1h"]);
        assertEquals([j.state, r.code], ["down", 5], source);
      }
      // ...and an old mtime on a fresh line is up.
      await Deno.writeTextFile(stamp, stampLine(0));
      const old = new Date(Date.now() - 30 * 24 * HOUR);
      await Deno.utime(stamp, old, old);
      for (const source of [serve.url, stamp]) {
        const { j } = await watchJson(source, ["--max-age", "1h"]);
        assertEquals(j.state, "up", source);
      }
    } finally {
      await serve.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch: a stamp serve that stops answering is unreachable (cannot read), never down",
  ...servers,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    await Deno.writeTextFile(stamp, stampLine(5 * HOUR)); // old: were it judged, it would be down
    try {
      await t.step("killed: the connection is refused", async () => {
        const serve = await startServe(stamp);
        const before = await watchJson(serve.url, ["--max-age", "1h"]);
        assertEquals(before.j.state, "down");
        await serve.stop("SIGKILL");
        const { r, j } = await watchJson(serve.url, ["--max-age", "1h"]);
        assertEquals([j.state, j.problem, r.code], ["unreachable", "cannot-read", 6], r.stdout);
        assertMatch(j.detail, /Cannot fetch "http:\/\/127\.0\.0\.1:\d+\/": .*refused/i);
      });
      await t.step("frozen (SIGSTOP): TCP is accepted, no answer comes; timeout", async () => {
        const serve = await startServe(stamp);
        Deno.kill(serve.child.pid, "SIGSTOP");
        try {
          const { r, j } = await watchJson(serve.url, ["--max-age", "1h", "--timeout", "1s"]);
          assertEquals([j.state, j.problem, r.code], ["unreachable", "cannot-read", 6], r.stdout);
          assertStringIncludes(j.detail, "no answer within 1s");
          assert(r.ms < 30_000, `took ${r.ms}ms`); // never answered: not waited for
        } finally {
          Deno.kill(serve.child.pid, "SIGCONT");
          await serve.stop("SIGKILL");
        }
      });
      await t.step("a listener that accepts and never answers: timeout", async () => {
        const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const conns: Deno.Conn[] = [];
        const accepting = (async () => {
          for await (const conn of listener) conns.push(conn);
        })().catch(() => {});
        try {
          const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`;
          const { r, j } = await watchJson(url, ["--max-age", "1h", "--timeout", "1s"]);
          assertEquals([j.state, j.problem, r.code], ["unreachable", "cannot-read", 6]);
          assertStringIncludes(j.detail, "no answer within 1s");
          assert(conns.length >= 1, "the watcher connected");
          assert(r.ms < 30_000, `took ${r.ms}ms`); // never answered: not waited for
        } finally {
          listener.close();
          for (const c of conns) c.close();
          await accepting;
        }
      });
      await t.step("something that is not a stamp serve is a bad answer", async () => {
        const answers: Record<string, () => Response> = {
          "/html": () => new Response("<html>hello</html>", { status: 200 }),
          "/json": () => Response.json({ state: "stamped", ageSeconds: 1 }),
          "/redirect": () => Response.redirect("http://127.0.0.1:1/elsewhere", 302),
          "/teapot": () => new Response("{}", { status: 418 }),
          "/never500": () =>
            Response.json({ version: 1, state: "never", servedAt: new Date().toISOString() }, {
              status: 500,
            }),
        };
        const server = Deno.serve(
          { hostname: "127.0.0.1", port: 0, onListen() {} },
          (req) => answers[new URL(req.url).pathname]!(),
        );
        try {
          for (const path of Object.keys(answers)) {
            const url = `http://127.0.0.1:${server.addr.port}${path}`;
            const { r, j } = await watchJson(url, ["--max-age", "1h"]);
            assertEquals([j.state, j.problem, r.code], ["unreachable", "bad-answer", 6], path);
            const why: Record<string, string> = {
              "/html": "not JSON",
              "/json": "version",
              "/redirect": "HTTP 302 (to http://127.0.0.1:1/elsewhere; not followed)",
              "/teapot": "HTTP 418",
              "/never500": 'state "never" came with HTTP 500',
            };
            assertStringIncludes(j.detail, why[path]!, path);
          }
        } finally {
          await server.shutdown();
        }
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch: a URL's age is the server's, so the watcher's own clock does not matter",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    await Deno.writeTextFile(stamp, stampLine(MINUTE));
    const serve = await startServe(stamp);
    const limits = { maxAgeMs: HOUR, graceMs: HOUR, timeoutMs: 10_000 };
    try {
      // The watcher's clock 30 days ahead (or behind): the served age (a minute) decides.
      for (const skew of [30 * 24 * HOUR, -30 * 24 * HOUR]) {
        const r = await watch(serve.url, { ...limits, now: () => Date.now() + skew });
        assertEquals(r.verdict.state, "up", `skew ${skew}: ${r.verdict.detail}`);
        assertEquals(r.verdict.ageFrom, "server");
        assert(Math.abs(r.verdict.ageMs! - MINUTE) < 30_000, String(r.verdict.ageMs));
      }
      // An old stamp, with the watcher's clock set to a minute after its time: still down.
      await Deno.writeTextFile(stamp, stampLine(5 * HOUR));
      const stampedAt = Date.parse((await Deno.readTextFile(stamp)).slice(0, 24));
      const r = await watch(serve.url, { ...limits, now: () => stampedAt + MINUTE });
      assertEquals(r.verdict.state, "down", r.verdict.detail);
      // A file has no server: there this machine's clock is the only one, and it is used.
      const f = await watch(stamp, { ...limits, now: () => stampedAt + MINUTE });
      assertEquals([f.verdict.state, f.verdict.ageFrom], ["up", "this machine"]);
    } finally {
      await serve.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch --state --notify: one POST per transition, none on a repeat, one on recovery",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    const state = `${dir}/state.json`;
    await Deno.writeTextFile(stamp, stampLine(MINUTE));
    const port = freePort();
    let serve = await startServe(stamp, port);
    const hook = startWebhook();
    const args = ["--max-age", "1h", "--grace", "1h", "--state", state, "--notify", hook.url];
    const step = async (want: string, posts: number, previous?: string) => {
      const before = hook.accepted.length;
      const { r, j } = await watchJson(serve.url, args);
      assertEquals(j.state, want, r.stdout + r.stderr);
      assertEquals(hook.accepted.length - before, posts, `POSTs for ${want}: ${r.stdout}`);
      assertEquals(hook.attempts(), hook.accepted.length, "no failed or extra attempts");
      const kept = await readState(state);
      assertEquals(kept.state, want);
      assertEquals(kept.owed, []);
      if (posts === 1) {
        const body = hook.accepted.at(-1)!;
        assertEquals([body.state, body.previous], [want, previous]);
        assertEquals(body.source, serve.url);
        assertEquals([body.maxAgeSeconds, body.graceSeconds], [3600, 3600]);
        assertEquals(j.memory?.transition, true);
        assertEquals(j.notify?.url, hook.url.replace("s3cret", "***"));
      } else assertEquals(j.memory?.transition, false);
      assert(!r.stdout.includes("s3cret"), "the webhook's token is never printed");
      return j;
    };
    try {
      await step("up", 1, undefined); // first run: the channel is proven, previous absent
      await step("up", 0);
      const since = (await readState(state)).since;
      await step("up", 0);
      assertEquals((await readState(state)).since, since, "since is when the state began");
      await Deno.writeTextFile(stamp, stampLine(HOUR + 5 * MINUTE));
      await step("late", 1, "up");
      await step("late", 0);
      await Deno.writeTextFile(stamp, stampLine(3 * HOUR));
      await step("down", 1, "late");
      await step("down", 0);
      await serve.stop("SIGKILL");
      const gone = await step("unreachable", 1, "down");
      assertEquals(gone.problem, "cannot-read");
      assertEquals(hook.accepted.at(-1)!.problem, "cannot-read");
      await step("unreachable", 0);
      // The server comes back, on the same address, with a fresh stamp: recovery is notified.
      await Deno.writeTextFile(stamp, stampLine(0));
      serve = await startServe(stamp, port);
      await step("up", 1, "unreachable");
      await step("up", 0);
      assertEquals(hook.accepted.length, 5);
      assertEquals(hook.accepted.map((b) => b.state), [
        "up",
        "late",
        "down",
        "unreachable",
        "up",
      ]);
      const text = await cli(["watch", serve.url, ...args]);
      assertStringIncludes(text.stdout, "state: unchanged since");
    } finally {
      await serve.stop();
      await hook.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch --notify: a failed notification is said, owed, retried next run, in order",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    const state = `${dir}/state.json`;
    const own = `${dir}/own-stamp`;
    await Deno.writeTextFile(stamp, stampLine(MINUTE));
    const serve = await startServe(stamp);
    const hook = startWebhook();
    const args = (url: string) => [
      "--max-age",
      "1h",
      "--grace",
      "1h",
      "--state",
      state,
      "--notify",
      url,
      "--stamp",
      own,
    ];
    try {
      const first = await watchJson(serve.url, args(hook.url));
      assertEquals([first.j.state, hook.accepted.length], ["up", 1]);
      const ownBefore = await Deno.readTextFile(own);

      // The webhook fails (503): said on stderr and in the output, owed, and the state's code.
      hook.fail(true);
      await Deno.writeTextFile(stamp, stampLine(HOUR + 5 * MINUTE));
      const failed = await watchJson(serve.url, args(hook.url));
      assertEquals([failed.j.state, failed.r.code], ["late", 4]);
      assertEquals(failed.j.notify?.owed, 1);
      assertStringIncludes(failed.j.notify?.error ?? "", "HTTP 503");
      assertStringIncludes(failed.r.stderr, "Cannot notify");
      assertStringIncludes(failed.r.stderr, "retried on the next run");
      assert(!failed.r.stderr.includes("s3cret"), failed.r.stderr);
      assertEquals((await readState(state)).owed.map((n) => n.state), ["late"]);
      // Its alerts do not get through: the watcher goes silent to its own watcher.
      assertEquals(failed.j.ownStamp?.state, "withheld");
      assertEquals(await Deno.readTextFile(own), ownBefore);

      // A second transition while the webhook still fails: both owed, in order.
      await Deno.writeTextFile(stamp, stampLine(3 * HOUR));
      const again = await watchJson(serve.url, args(hook.url));
      assertEquals([again.j.state, again.j.notify?.owed], ["down", 2]);
      assertEquals(hook.accepted.length, 1);

      // The webhook is gone altogether (connection refused): still owed.
      const refused = await watchJson(serve.url, args(`http://127.0.0.1:${freePort()}/`));
      assertEquals(refused.j.notify?.owed, 2);
      assertMatch(refused.j.notify?.error ?? "", /Cannot notify .*refused/i);

      // It answers again: the owed ones go, oldest first, on a run with no transition.
      hook.fail(false);
      const retried = await watchJson(serve.url, args(hook.url));
      assertEquals([retried.j.state, retried.j.memory?.transition], ["down", false]);
      assertEquals(retried.j.notify?.delivered, 2);
      assertEquals(retried.j.notify?.owed, 0);
      assertEquals(hook.accepted.map((b) => [b.previous, b.state]), [
        [undefined, "up"],
        ["up", "late"],
        ["late", "down"],
      ]);
      const late = hook.accepted[1]!;
      assert(Date.parse(late.at) < Date.parse(late.sentAt), "at: when seen; sentAt: when sent");
      assertEquals((await readState(state)).owed, []);
      assertEquals(retried.j.ownStamp?.state, "refreshed");
      assert((await Deno.readTextFile(own)) !== ownBefore);

      // And nothing more after that.
      const quiet = await watchJson(serve.url, args(hook.url));
      assertEquals(quiet.j.notify?.delivered, 0);
      assertEquals(hook.accepted.length, 3);
    } finally {
      await serve.stop();
      await hook.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch --state: a state file that cannot be read stops the watcher (exit 2), no first run",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    const state = `${dir}/state.json`;
    const own = `${dir}/own`;
    await Deno.writeTextFile(stamp, stampLine(MINUTE));
    const serve = await startServe(stamp);
    const hook = startWebhook();
    const args = ["--max-age", "1h", "--state", state, "--notify", hook.url, "--stamp", own];
    try {
      const valid = {
        version: 1,
        source: serve.url,
        state: "down",
        since: new Date().toISOString(),
        checkedAt: new Date().toISOString(),
        detail: "x",
        owed: [],
        dropped: 0,
      };
      const bad: [string, string][] = [
        ["not JSON", "{half"],
        ["empty", ""],
        ["another version", JSON.stringify({ ...valid, version: 2 })],
        ["an unknown field", JSON.stringify({ ...valid, extra: 1 })],
        ["an unknown state", JSON.stringify({ ...valid, state: "fine" })],
        ["unreachable without a problem", JSON.stringify({ ...valid, state: "unreachable" })],
        ["another source", JSON.stringify({ ...valid, source: "http://elsewhere:1/" })],
      ];
      for (const [what, content] of bad) {
        await Deno.writeTextFile(state, content);
        const r = await cli(["watch", serve.url, ...args]);
        assertEquals(r.code, 2, `${what}: ${r.stdout}${r.stderr}`);
        assertMatch(r.stderr, /Cannot (read|use) watch state/, what);
        assertEquals(await Deno.readTextFile(state), content, `${what}: the state is untouched`);
        assertEquals(hook.attempts(), 0, `${what}: nothing notified`);
        assert(!(await Deno.stat(own).then(() => true, () => false)), `${what}: no own stamp`);
      }
      await Deno.remove(state);
      await Deno.mkdir(state);
      const isDir = await cli(["watch", serve.url, ...args]);
      assertEquals(isDir.code, 2);
      assertStringIncludes(isDir.stderr, "is a directory");
      await Deno.remove(state);
      // Absent is a first run.
      const first = await watchJson(serve.url, args);
      assertEquals([first.j.state, first.j.memory?.previous, hook.accepted.length], [
        "up",
        undefined,
        1,
      ]);
    } finally {
      await serve.stop();
      await hook.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch --stamp: the watcher's own stamp is refreshed after each run, and can be watched",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    const own = `${dir}/own`;
    await Deno.writeTextFile(stamp, stampLine(MINUTE));
    const serve = await startServe(stamp);
    const ownServe = await startServe(own);
    try {
      let last = 0;
      for (
        const [content, state] of [
          [stampLine(MINUTE), "up"],
          [stampLine(5 * HOUR), "down"],
          ["garbage\n", "unreachable"],
        ] as const
      ) {
        await Deno.writeTextFile(stamp, content);
        const { j } = await watchJson(serve.url, ["--max-age", "1h", "--stamp", own]);
        assertEquals([j.state, j.ownStamp?.state], [state, "refreshed"]);
        const line = parseStamp(await Deno.readTextFile(own));
        assertEquals(line.kind, "watched");
        assertStringIncludes(line.summary, `${serve.url} is ${state}`);
        assert(line.timeMs > last, "refreshed, not kept");
        last = line.timeMs;
        // The watcher is itself watchable: by file, and over HTTP.
        for (const source of [own, ownServe.url]) {
          const w = await watchJson(source, ["--max-age", "10m"]);
          assertEquals(w.j.state, "up", source);
        }
      }
      // A run that could not complete (its state cannot be kept) does not refresh it.
      await Deno.writeTextFile(`${dir}/state.json`, "{half");
      const before = await Deno.readTextFile(own);
      const r = await cli([
        "watch",
        serve.url,
        "--max-age",
        "1h",
        "--stamp",
        own,
        "--state",
        `${dir}/state.json`,
      ]);
      assertEquals(r.code, 2);
      assertEquals(await Deno.readTextFile(own), before);
    } finally {
      await serve.stop();
      await ownServe.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("watch and stamp serve refuse bad input with exit 2, before anything is written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
  const stamp = `${dir}/stamp`;
  await Deno.writeTextFile(stamp, stampLine(0));
  try {
    const cases: [string[], string][] = [
      [["watch", stamp], "--max-age"],
      [["watch", stamp, "--max-age", "30"], "name a unit"],
      [["watch", stamp, "--max-age", "soon"], "Cannot read duration"],
      [["watch", stamp, "--max-age", "0s"], "at least"],
      [["watch", stamp, "--max-age", "1h", "--grace", "-1h"], "--grace"],
      [["watch", "", "--max-age", "1h"], "empty"],
      [["watch", "ftp://host/stamp", "--max-age", "1h"], "only http(s) URLs"],
      [["watch", stamp, "--max-age", "1h", "--notify", "http://127.0.0.1:1/"], "needs --state"],
      [[
        "watch",
        stamp,
        "--max-age",
        "1h",
        "--state",
        `${dir}/s.json`,
        "--notify",
        "mailto:x@y",
      ], "only http(s) URLs are webhooks"],
      [["watch", stamp, "--max-age", "1h", "--state", `${dir}/no/s.json`], "does not exist"],
      [["watch", stamp, "--max-age", "1h", "--stamp", `${dir}/no/own`], "does not exist"],
      [["watch", stamp, "--max-age", "1h", "--stamp", stamp], "same file"],
      [["stamp", "serve", "--stamp", stamp], "--listen"],
      [["stamp", "serve", "--listen", ":9470", "--stamp", stamp], "explicit address"],
      [["stamp", "serve", "--listen", "9470", "--stamp", stamp], "explicit address"],
      [["stamp", "serve", "--listen", "127.0.0.1", "--stamp", stamp], "explicit address"],
      [["stamp", "serve", "--listen", "127.0.0.1:70000", "--stamp", stamp], "0 to 65535"],
      [["stamp", "serve", "--listen", "127.0.0.1:0", "--stamp", `${dir}/no/stamp`], "not exist"],
    ];
    for (const [args, words] of cases) {
      const r = await reconcileCli(args);
      assertEquals(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assertStringIncludes(r.stderr, words, args.join(" "));
    }
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["stamp"], "nothing written");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "stamp serve stops on SIGTERM and SIGINT with exit 0, and says when it cannot listen",
  ...servers,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-" });
    const stamp = `${dir}/stamp`;
    try {
      for (const signal of ["SIGTERM", "SIGINT"] as const) {
        const serve = await startServe(stamp);
        const end = await serve.stop(signal);
        assertEquals([end.code, end.signal], [0, null], end.stderr);
        assertStringIncludes(end.stderr, `serving stamp "${stamp}" on http://127.0.0.1:`);
        assertStringIncludes(end.stderr, `stopped serving (${signal})`);
      }
      const help = await cli(["stamp", "serve", "--help"]);
      assertStringIncludes(help.stdout, `(default: "${DEFAULT_STAMP_PATH}")`);
      const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      try {
        const port = (taken.addr as Deno.NetAddr).port;
        const r = await cli(["stamp", "serve", "--listen", `127.0.0.1:${port}`, "--stamp", stamp]);
        assertEquals(r.code, 2);
        assertStringIncludes(r.stderr, `Cannot listen on "127.0.0.1:${port}"`);
      } finally {
        taken.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

const PACKAGING = `${ROOT}packaging`;
const UNITS = [
  "mesh-reconcile.service",
  "mesh-reconcile.timer",
  "mesh-reconcile-watch.service",
  "mesh-reconcile-watch.timer",
  "mesh-reconcile-stamp.service",
];
const hasSystemdAnalyze = await new Deno.Command("systemd-analyze", { args: ["--version"] })
  .output().then((o) => o.success, () => false);

Deno.test({
  name: "packaging: the systemd units verify without a word (systemd-analyze verify)",
  ignore: !hasSystemdAnalyze,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-units-" });
    try {
      // The units name the installed binary; verify checks it exists and is executable.
      const binary = `${dir}/mesh-reconcile`;
      await Deno.writeTextFile(binary, "#!/bin/sh\nexit 0\n");
      await Deno.chmod(binary, 0o755);
      for (const unit of UNITS) {
        const text = await Deno.readTextFile(`${PACKAGING}/${unit}`);
        await Deno.writeTextFile(
          `${dir}/${unit}`,
          text.replaceAll("/usr/lib/mesh/mesh-reconcile", binary),
        );
      }
      const out = await new Deno.Command("systemd-analyze", {
        args: ["verify", ...UNITS.map((u) => `${dir}/${u}`)],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      // verify exits 0 on unknown keys and bad calendar specs, and only warns: read what it says.
      assertEquals([out.code, said], [0, ""]);
      const run = await Deno.readTextFile(`${PACKAGING}/mesh-reconcile.service`);
      assertMatch(run, /^ExecStart=\S+ run --registry \S+ --stamp \S+/m);
      const stampUnit = await Deno.readTextFile(`${PACKAGING}/mesh-reconcile-stamp.service`);
      assertMatch(
        stampUnit,
        /^ExecStart=\S+ stamp serve --listen \S+ --stamp \S+ \$MESH_STAMP_ARGS$/m,
      );
      const watchUnit = await Deno.readTextFile(`${PACKAGING}/mesh-reconcile-watch.service`);
      assertMatch(watchUnit, /^ExecStart=\S+ watch \$\{MESH_WATCH_SOURCE\} --max-age .* --state/m);
      assertMatch(watchUnit, /^EnvironmentFile=\/etc\/default\/mesh-reconcile-watch$/m);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("packaging: the OpenRC scripts parse and run mesh-every with the command asked", async () => {
  const sh = async (script: string, env: Record<string, string> = {}) => {
    const out = await new Deno.Command("sh", {
      args: ["-c", script],
      env,
      clearEnv: true,
      cwd: PACKAGING,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    };
  };
  for (
    const f of [
      "mesh-reconcile.openrc",
      "mesh-reconcile-watch.openrc",
      "mesh-reconcile-stamp.openrc",
    ]
  ) {
    const r = await sh(`sh -n ${f}`);
    assertEquals([r.code, r.stderr], [0, ""], f);
  }
  const line = (f: string, env: Record<string, string> = {}) =>
    sh(`. ./${f} && printf '%s %s' "$command" "$command_args"`, env).then((r) => r.stdout);
  assertEquals(
    (await line("mesh-reconcile.openrc")).trim(),
    "/usr/lib/mesh/mesh-every 15m /usr/lib/mesh/mesh-reconcile run --registry " +
      "/var/lib/mesh/reconcile/registry.yaml --stamp /var/lib/mesh/reconcile/stamp " +
      "--result /var/lib/mesh/reconcile/result.json --interval 15m",
  );
  assertEquals(
    (await line("mesh-reconcile-watch.openrc", {
      MESH_WATCH_SOURCE: "http://a:9470/",
      MESH_WATCH_INTERVAL: "60s",
    })).trim(),
    "/usr/lib/mesh/mesh-every 60s /usr/lib/mesh/mesh-reconcile watch http://a:9470/ --max-age " +
      "45m --grace 1h --state /var/lib/mesh/reconcile-watch/state.json --stamp " +
      "/var/lib/mesh/reconcile-watch/stamp",
  );
  assertEquals(
    (await line("mesh-reconcile-stamp.openrc", { MESH_STAMP_LISTEN: "10.0.0.1:9470" })).trim(),
    "/usr/lib/mesh/mesh-reconcile stamp serve --listen 10.0.0.1:9470 --stamp " +
      "/var/lib/mesh/reconcile/stamp",
  );
  assertEquals(
    await line("mesh-reconcile-stamp.openrc", {
      MESH_STAMP_LISTEN: "10.0.0.1:9470",
      MESH_STAMP_ARGS: "--cert /etc/mesh/tls/stamp.crt --key /var/lib/mesh/stamp.key",
    }),
    "/usr/lib/mesh/mesh-reconcile stamp serve --listen 10.0.0.1:9470 --stamp " +
      "/var/lib/mesh/reconcile/stamp --cert /etc/mesh/tls/stamp.crt --key /var/lib/mesh/stamp.key",
  );
  // No source, no listen address: start_pre refuses (eerror is openrc-run's; stubbed here).
  for (
    const [f, fn] of [["mesh-reconcile-watch.openrc", "start_pre"], [
      "mesh-reconcile-stamp.openrc",
      "start_pre",
    ]]
  ) {
    const r = await sh(`eerror() { echo "$*" >&2; }; checkpath() { :; }; . ./${f} && ${fn}`);
    assertEquals(r.code, 1, f);
    assertStringIncludes(r.stderr, "never defaulted", f);
  }
});

Deno.test("packaging: mesh-every runs again after each run ends, and stops on SIGTERM, run and all", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-every-" });
  try {
    const every = (args: string[]) =>
      new Deno.Command(`${PACKAGING}/mesh-every.sh`, {
        args,
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    // A command that fails (exit 5, a "down") is run again: its verdict is not the loop's failure.
    // Each run writes when it started (ms); stopped once a second run started, the loop shows
    // that it waited the interval between runs, whatever the machine's load made of the rest.
    const loop = every(["1s", "sh", "-c", `echo $(date +%s%3N) >> ${dir}/runs; exit 5`]);
    const starts = async () =>
      (await Deno.readTextFile(`${dir}/runs`).catch(() => "")).split("\n").filter((l) => l !== "")
        .map(Number);
    const deadline = Date.now() + 60_000;
    while ((await starts()).length < 2) {
      assert(
        Date.now() < deadline,
        `${(await starts()).length} run(s) within 60 s at 1s intervals`,
      );
      await new Promise((r) => setTimeout(r, 50));
    }
    loop.kill("SIGTERM");
    const out = await loop.output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, stderr);
    const [first, second] = await starts();
    assert(
      second! - first! >= 1000,
      `the second run started ${second! - first!} ms after the first`,
    );
    assertStringIncludes(stderr, "mesh-every: sh exit 5; next run in 1s");
    assertStringIncludes(stderr, "mesh-every: stopped");
    // SIGTERM during a run: the run is ended too, and waited for.
    const long = every(["1m", "sh", "-c", `echo $$ > ${dir}/pid; exec sleep 30`]);
    let pid = "";
    for (let i = 0; i < 100 && pid === ""; i++) {
      await new Promise((r) => setTimeout(r, 50));
      pid = await Deno.readTextFile(`${dir}/pid`).then((s) => s.trim(), () => "");
    }
    const started = Date.now();
    long.kill("SIGTERM");
    const end = await long.output();
    assertEquals(end.code, 0);
    // The run sleeps 30 s: ended well before, the loop did not wait for it.
    assert(Date.now() - started < 20_000, "stopped at once, not after the run");
    const alive = await new Deno.Command("kill", { args: ["-0", pid], stderr: "null" }).output();
    assert(!alive.success, `the run ${pid} was left behind`);
    // Bad usage: exit 2.
    for (const args of [["sh"], ["x", "true"], ["0s", "true"], ["1.5m", "true"]]) {
      const bad = await new Deno.Command(`${PACKAGING}/mesh-every.sh`, { args, stderr: "piped" })
        .output();
      assertEquals(bad.code, 2, args.join(" "));
    }
    // A bare number (seconds, before durations carried their unit) is refused, naming the form.
    const bare = await new Deno.Command(`${PACKAGING}/mesh-every.sh`, {
      args: ["900", "true"],
      stderr: "piped",
    }).output();
    assertEquals(bare.code, 2);
    assertStringIncludes(new TextDecoder().decode(bare.stderr), '"900s"');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the stamp `run` writes after a clean run is a stamp the watcher reads", async () => {
  const { stampLine: runStampLine } = await import("../../reconcile/report.ts");
  type Result = Parameters<typeof runStampLine>[0];
  const time = new Date().toISOString();
  const line = runStampLine({
    time,
    clean: true,
    status: "clean",
    exitCode: 0,
    registry: "/var/lib/mesh/reconcile/registry.yaml",
    entries: 4,
    findings: [],
    sources: [],
    observed: { containers: 2, ports: 3, addresses: 1 },
    subprocesses: 2,
  } as unknown as Result);
  const stamp = parseStamp(line);
  assertEquals([stamp.time, stamp.kind], [time, "clean"]);
  assertStringIncludes(stamp.summary, "4 entries agree with");
});
