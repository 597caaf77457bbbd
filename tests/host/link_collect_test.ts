/**
 * The link collects V8's heap when an apply ends (host/link.ts, `collect`), when the program runs
 * with `gc` exposed as the one-file host starts its link (`--v8-flags=--expose-gc`,
 * scripts/host_flags.ts; tests/host/onefile_test.ts sees the flag on the real start). In process,
 * with `globalThis.gc` replaced by a counter, a kept declaration and no broker (the link applies
 * its kept declaration at start without one).
 */

import { assertEquals } from "../support/assert.ts";
import { KEPT_FILE, LINK_DIR, runLink } from "../../host/link.ts";
import { controlKeyFile } from "../support/signing.ts";
import { declarationDigest } from "../../lib/declaration.ts";
import type { DeclarationMessage } from "../../lib/broker.ts";
import { debian } from "../../systems/debian/mod.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test(
  "the link collects its heap after each apply, before it reports, when gc is exposed",
  opts,
  async () => {
    const dir = await Deno.makeTempDir();
    const global = globalThis as { gc?: () => void };
    const saved = global.gc;
    const events: string[] = [];
    global.gc = () => events.push("gc");
    try {
      const text = JSON.stringify({
        version: 1,
        resources: [{
          id: "f",
          type: "file",
          path: `${dir}/tree/f.conf`,
          content: "a = 1\n",
          mode: "0644",
        }],
      });
      const kept: DeclarationMessage = {
        kind: "declaration",
        node: "collect-probe",
        generation: 1,
        digest: await declarationDigest(text),
        pushedAt: new Date().toISOString(),
        declaration: text,
      };
      await Deno.mkdir(`${dir}/tree`);
      await Deno.mkdir(`${dir}/state/${LINK_DIR}`, { recursive: true });
      await Deno.writeTextFile(`${dir}/state/${LINK_DIR}/${KEPT_FILE}`, JSON.stringify(kept));
      const stop = new AbortController();
      const stopped = await runLink({
        system: debian,
        broker: "amqp://n:p@127.0.0.1:1/%2F",
        node: "collect-probe",
        controlKey: await controlKeyFile(dir),
        stateDir: `${dir}/state`,
        version: "test",
        every: 60_000,
        retry: 60_000,
        signal: stop.signal,
        onApplied: (report) => {
          events.push(`applied ${report.outcome} ${report.applied}/${report.total}`);
          stop.abort();
        },
      });
      assertEquals(stopped, { reason: "signal" });
      assertEquals(events, ["gc", "applied applied 1/1"]);
      assertEquals(await Deno.readTextFile(`${dir}/tree/f.conf`), "a = 1\n");
    } finally {
      if (saved === undefined) delete global.gc;
      else global.gc = saved;
      await Deno.remove(dir, { recursive: true });
    }
  },
);
