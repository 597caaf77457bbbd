/**
 * withLabLock (tests/lab/mod.ts): builders of the same lab root filesystem take turns, in one
 * process or several (flock on `<LAB_CACHE>/<kind>.lock`), and the lock is released when the
 * builder throws.
 */

import { assertEquals, assertRejects } from "../support/assert.ts";
import { withLabLock } from "./mod.ts";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("lab builders of one kind take turns, also across processes, and a failure releases", async () => {
  const events: string[] = [];
  const builder = (name: string) => async () => {
    events.push(`${name} starts`);
    await pause(150);
    events.push(`${name} ends`);
  };
  await Promise.all([withLabLock("openrc", builder("a")), withLabLock("openrc", builder("b"))]);
  // Either may go first; the second starts only after the first ended.
  const first = events[0]?.slice(0, 1) === "b" ? "b" : "a";
  const second = first === "a" ? "b" : "a";
  assertEquals(events, [`${first} starts`, `${first} ends`, `${second} starts`, `${second} ends`]);

  // Another process holds the lock for 600 ms: this one waits for it.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { withLabLock } from ${JSON.stringify(new URL("./mod.ts", import.meta.url).href)};
await withLabLock("openrc", async () => {
  console.log("held");
  await new Promise((r) => setTimeout(r, 600));
});`,
    ],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assertEquals((await reader.read()).value?.trim(), "held");
  const asked = Date.now();
  await withLabLock("openrc", () => Promise.resolve());
  const waited = Date.now() - asked;
  reader.releaseLock();
  await child.stdout.cancel().catch(() => {});
  assertEquals((await child.status).code, 0);
  // Not a timing claim about speed: the lock was not granted while the other process held it.
  assertEquals(waited >= 300, true, `granted after ${waited} ms while another process held it`);

  const e = await assertRejects(
    () => withLabLock("openrc", () => Promise.reject(new Error("boom"))),
    Error,
  );
  assertEquals(e.message, "boom");
  await withLabLock("openrc", () => Promise.resolve());
});
