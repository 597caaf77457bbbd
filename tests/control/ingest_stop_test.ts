/**
 * `mesh-control ingest` ends within 2 s of SIGTERM whatever it is doing (docs/design.md,
 * "Hostile inputs", rule 1): here, blocked on a database lock while it records a report. The
 * report, not acknowledged, stays on the queue for the next ingest. Held to
 * tests/support/within.ts's STOP_BOUND_MS, not to 2 s: what it must not do (wait for the lock)
 * never ends, and a loaded machine may take longer than 2 s to end a process.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { openBroker } from "../../lib/amqp.ts";
import { REPORTS_QUEUE } from "../../lib/broker.ts";
import { publishReports, reportOf as report, uniqueNode } from "./support.ts";
import { withVhost } from "./vhost.ts";
import { STOP_BOUND_MS } from "../support/within.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test(
  "ingest blocked on a locked table ends at SIGTERM, not waiting for the lock; the report stays queued",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const node = uniqueNode("stop");
      await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
      await publishReports(vhost.amqp, [[node, report(node)]]);
      const release = Promise.withResolvers<void>();
      const locked = Promise.withResolvers<void>();
      const holding = inv.sql.begin(async (tx) => {
        await tx`lock table reports in access exclusive mode`;
        locked.resolve();
        await release.promise;
      });
      await locked.promise;
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", `${ROOT}control/main.ts`, "ingest"],
        cwd: ROOT,
        env: vhost.env,
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = child.output();
      try {
        // Blocked: a query of the ingest waits for the lock.
        for (let i = 0;; i++) {
          const rows = await inv.sql`
            select count(*)::int as waiting from pg_stat_activity
            where wait_event_type = 'Lock' and datname = current_database()`;
          if ((rows[0]?.waiting as number) > 0) break;
          assert(i < 300, "the ingest never reached the locked table");
          await new Promise((r) => setTimeout(r, 50));
        }
        // The lock is held until this test lets it go (in finally): an ingest that waited for
        // its query instead of ending at SIGTERM never ends by itself (STOP_BOUND_MS).
        child.kill("SIGTERM");
        let timer: ReturnType<typeof setTimeout> | undefined;
        const ended = await Promise.race([
          output.then(() => true),
          new Promise<boolean>((r) => timer = setTimeout(() => r(false), STOP_BOUND_MS)),
        ]);
        clearTimeout(timer);
        assert(
          ended,
          `ingest did not end within ${STOP_BOUND_MS} ms of SIGTERM while its query waited`,
        );
        const end = await output;
        assertEquals(end.code, 0, new TextDecoder().decode(end.stderr));
      } finally {
        try {
          child.kill("SIGKILL");
        } catch { /* ended */ }
        await output;
        release.resolve();
        await holding;
      }
      const rows = await inv.sql`select node from reports where node = ${node}`;
      assertEquals(rows.length, 0, "nothing recorded while it was stopped");
      const check = await openBroker(vhost.amqp);
      try {
        const { messageCount } = await check.channel.checkQueue(REPORTS_QUEUE);
        assertEquals(messageCount, 1, "the report, not acknowledged, is on the queue again");
      } finally {
        await check.close();
      }
    }),
);
