import { assert, assertEquals, assertThrows } from "../support/assert.ts";
import { observeSockets, parseProcNetTcp } from "../../reconcile/observe/sockets.ts";
import { readAccounts } from "../../lib/accounts.ts";

// Recorded from /proc/net/tcp and /proc/net/tcp6 of the Debian 12 development machine
// (kernel 6.x, x86_64) on 2026-11-30: caddy's admin API on 127.0.0.1:12019, epmd on [::1]:4369,
// caddy on [::]:18081, plus a made-up ESTABLISHED row (state 01) and an IPv4-mapped row.
const TCP =
  `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2EF3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 14735 1 00000000d96bd278 100 0 0 10 0
   1: 0100007F:6448 00000000:0000 0A 00000000:00000000 00:00000000 00000000   106        0 6641 1 00000000327da56c 100 0 0 10 0
   2: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1597 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1538 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000   101        0 40001 1 0000000000000000 20 4 30 10 -1
`;
const TCP6 =
  `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1111 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   106        0 6060 1 0000000059b44edb 100 0 0 10 0
   1: 00000000000000000000000000000000:46A1 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 14739 1 00000000ce1b8f10 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 14800 1 00000000ce1b8f10 100 0 0 10 0
   3: 000080FE00000000FF005452123456FE:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 14801 1 00000000ce1b8f10 100 0 0 10 0
`;

Deno.test("the kernel's tcp table decodes to listening sockets only", () => {
  const l = parseProcNetTcp(TCP, 4);
  assertEquals(l.map((x) => [x.address, x.port, x.uid, x.inode]), [
    ["127.0.0.1", 12019, 0, 14735],
    ["127.0.0.1", 25672, 106, 6641],
    ["0.0.0.0", 2024, 0, 1597],
  ]);
});

Deno.test("the kernel's tcp6 table decodes, compressed, with IPv4-mapped addresses", () => {
  const l = parseProcNetTcp(TCP6, 6);
  assertEquals(l.map((x) => [x.address, x.port]), [
    ["::1", 4369],
    ["::", 18081],
    ["::ffff:127.0.0.1", 8080],
    ["fe80::5254:ff:fe56:3412", 22],
  ]);
});

Deno.test("a table that is not the kernel's format is an error, not an empty list", () => {
  assertThrows(() => parseProcNetTcp("garbage\n", 4), Error);
  assertThrows(() => parseProcNetTcp(TCP.replace("0100007F:2EF3", "zz:1"), 4), Error);
});

Deno.test("a real listener is found with its process and account", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const listener6 = Deno.listen({ hostname: "::1", port: 0 });
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const port6 = (listener6.addr as Deno.NetAddr).port;
    const seen = await observeSockets({ passwd: await readAccounts() });
    assertEquals(seen.sources.map((s) => s.state), ["observed", "observed"]);
    const mine = seen.listeners.find((l) => l.port === port && l.family === 4);
    assert(mine, `port ${port} not observed`);
    assertEquals(mine.address, "127.0.0.1");
    assertEquals(mine.uid, Deno.uid());
    assertEquals(mine.user, "root");
    assert(mine.processes.some((p) => p.pid === Deno.pid), JSON.stringify(mine.processes));
    const mine6 = seen.listeners.find((l) => l.port === port6 && l.family === 6);
    assertEquals(mine6?.address, "::1");
  } finally {
    listener.close();
    listener6.close();
  }
});

Deno.test("an unreadable socket table fails the source instead of returning nothing", async () => {
  const proc = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${proc}/net`);
    const seen = await observeSockets({ passwd: new Map(), proc });
    assertEquals(seen.sources.map((s) => s.state), ["failed"]);
    assert(seen.sources[0]!.detail.includes(`${proc}/net/tcp`));
  } finally {
    await Deno.remove(proc, { recursive: true });
  }
});

Deno.test("no tcp6 table means the kernel has no IPv6: absent, with the reason", async () => {
  const proc = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${proc}/net`);
    await Deno.writeTextFile(`${proc}/net/tcp`, TCP);
    const seen = await observeSockets({ passwd: new Map(), proc });
    assertEquals(seen.sources.map((s) => s.state), ["observed", "absent"]);
    assertEquals(seen.listeners.length, 3);
  } finally {
    await Deno.remove(proc, { recursive: true });
  }
});
