// Ingest's overlapping batches (control/ingest.ts) at the moment one fails while the batch before
// it is still committing: a fake broker channel and a fake database hold that timing exactly (no
// broker or PostgreSQL needed; ingest_test.ts covers the real ones). Found by review: ingest then
// returned with the earlier transaction in flight and never acknowledged it once committed.
import { assertEquals } from "../support/assert.ts";
import { reportKey } from "../../lib/broker.ts";
import { reportOf as report } from "./support.ts";
import { ingestReports } from "../../control/ingest.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("a batch failing while the batch before it commits: that batch is acknowledged, and ingest ends after it", async () => {
  const committed: string[] = [];
  // The fake database: batch "slow" takes 200 ms to read its nodes; batch "bad" fails at once.
  const tx = (strings: TemplateStringsArray, ...values: unknown[]) => {
    const text = strings.join("?");
    if (text.includes("from nodes")) {
      const names = values[0] as string[];
      if (names.includes("bad")) return Promise.reject(new Error("injected database failure"));
      return sleep(200).then(() => names.map((name) => ({ name })));
    }
    if (text.includes("insert into reports")) {
      const rows = JSON.parse(values[0] as string) as { identity: string }[];
      return Promise.resolve(Object.assign(rows.map((r) => ({ identity: r.identity })), {
        count: rows.length,
      }));
    }
    return Promise.resolve(Object.assign([], { count: 0 }));
  };
  const sql = {
    begin: async (fn: (t: typeof tx) => Promise<unknown>) => {
      const names: string[] = [];
      const spy = ((s: TemplateStringsArray, ...v: unknown[]) => {
        if (s.join("?").includes("from nodes")) names.push(...(v[0] as string[]));
        return tx(s, ...v);
      }) as typeof tx;
      const out = await fn(spy);
      committed.push(...names);
      return out;
    },
  };
  const acked: string[] = [];
  let deliver!: (m: unknown) => void;
  const channel = {
    prefetch: () => Promise.resolve(),
    checkQueue: () => Promise.resolve({ messageCount: 0 }),
    consume: (_q: string, fn: (m: unknown) => void) => {
      deliver = fn;
      return Promise.resolve({ consumerTag: "t" });
    },
    cancel: () => Promise.resolve(),
    ack: (m: { fields: { routingKey: string } }) => acked.push(m.fields.routingKey),
  };
  const message = (node: string) => ({
    fields: { routingKey: reportKey(node), deliveryTag: 1 },
    properties: {},
    content: new TextEncoder().encode(JSON.stringify(report(node))),
  });
  const running = ingestReports(sql as never, channel as never, { batch: 1 });
  await sleep(0);
  deliver(message("slow"));
  deliver(message("bad"));
  const error = await running.then(() => undefined, (e) => e as Error);
  const atReturn = [...committed];
  assertEquals(error?.message, "injected database failure");
  await sleep(400); // the first batch's transaction, still running when ingest returned
  assertEquals(committed, ["slow"]);
  // The first batch committed: it must be acknowledged (else it is redelivered and miscounted).
  assertEquals(acked, [reportKey("slow")]);
  // And ingest must not return (the caller then closes the channel and the pool) while a batch's
  // transaction is still in flight.
  assertEquals(atReturn, ["slow"]);
});
