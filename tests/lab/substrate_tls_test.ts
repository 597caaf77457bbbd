/**
 * The first node's substrate serves TLS from the mesh's own CA, on lab machines. Two bare Debian
 * (systemd) lab machines on a podman network of their own: the first node gets the one-file host
 * carrying a substrate lock made on this machine (tests/support/substrate.ts) and a name of its
 * own in `/etc/mesh/public-names`, and applies its bundle once (`mesh-host reconcile`). Then:
 *
 * - the CA's key and the server certificates' keys are root-only (0600);
 * - from the second machine, holding only the CA certificate, the broker's AMQPS (5671), its
 *   management API (HTTPS, 15671) and PostgreSQL (5432, its `starttls`) present certificates that
 *   verify against the mesh's CA for the first node's address and for the name of
 *   `public-names`; for another name, or against another CA, they do not (`openssl s_client`);
 * - plain AMQP (5672) and HTTP (15672) are not offered to the network, and PostgreSQL refuses a
 *   connection without TLS from any address but loopback;
 * - the bundle applied again changes nothing; a name added to `public-names` makes the next
 *   apply reissue both certificates and restart both containers, which then serve the new
 *   certificate (the renewal path: a certificate no longer good for every name is due, as one
 *   near its end is);
 * - a node on the second machine, enrolled by mesh-control on the first (itself connected over
 *   TLS, verified), links over `amqps://` verifying the broker against the mesh's CA and reports
 *   (the board says `not pushed`); verifying against another CA, its link is refused, saying so.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { bootLab, type LabMachine, registryForBridge } from "./mod.ts";
import { run } from "../../lib/command.ts";
import { freshSubstrateLock, substrateHost } from "../support/substrate.ts";
import { oneFileProgram } from "../support/onefile.ts";

interface Applied {
  outcome?: string;
  changes?: { id: string; change: string }[];
}

Deno.test({
  name: "the first node's broker and store serve TLS from the mesh's CA, for its names, renewed",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const lock = await freshSubstrateLock();
    const [host, control] = await Promise.all([
      substrateHost(lock.path),
      oneFileProgram("control"),
    ]);
    const tag = crypto.randomUUID().slice(0, 6);
    const network = `mesh-tls-${tag}`;
    const subnet = `10.214.${100 + Math.floor(Math.random() * 150)}`;
    const firstAddress = `${subnet}.10`;
    await run(["podman", "network", "create", "--subnet", `${subnet}.0/24`, network]);
    const machines: LabMachine[] = [];
    let stopForwarder = () => {};
    const tmp = await Deno.makeTempDir({ prefix: "mesh-tls-lab-" });
    try {
      const booted = await Promise.allSettled([
        bootLab("systemd", { bare: true, network, ip: firstAddress, name: `mesh-lab-tls1-${tag}` }),
        bootLab("systemd", {
          bare: true,
          network,
          ip: `${subnet}.11`,
          name: `mesh-lab-tls2-${tag}`,
        }),
      ]);
      for (const b of booted) if (b.status === "fulfilled") machines.push(b.value);
      const refused = booted.find((b) => b.status === "rejected");
      if (refused) throw (refused as PromiseRejectedResult).reason;
      const [first, second] = machines as [LabMachine, LabMachine];
      stopForwarder = await registryForBridge(first, network);
      await first.copyIn(host.path, "/usr/local/sbin/mesh-host");
      await first.exec([
        "sh",
        "-c",
        "mkdir -p /etc/mesh && printf 'mesh.example.test  # the name the nodes use\\n' >/etc/mesh/public-names",
      ]);
      const apply = async (): Promise<string[]> => {
        const r = await first.exec(["mesh-host", "reconcile", "--json"], {
          allowFailure: true,
          timeoutMs: 20 * 60_000,
        });
        const result = JSON.parse(r.stdout || "{}") as Applied;
        assertEquals(r.code, 0, `mesh-host reconcile: ${r.stdout}\n${r.stderr}`);
        return (result.changes ?? []).filter((c) => c.change !== "unchanged").map((c) => c.id);
      };
      const changedFirst = await apply();
      for (const id of ["mesh-ca", "signing-key", "server-certificates", "store", "broker"]) {
        assert(changedFirst.includes(id), `the first apply did not make ${id}: ${changedFirst}`);
      }

      const modes = await first.exec([
        "stat",
        "-c",
        "%n %a %U",
        "/etc/mesh/ca.crt",
        "/etc/mesh/secrets/ca.key",
        "/etc/mesh/secrets/tls/broker.key",
        "/etc/mesh/secrets/tls/store.key",
        "/etc/mesh/secrets/signing.key",
        "/etc/mesh/control.pub",
      ]);
      assertEquals(modes.stdout.trim().split("\n"), [
        "/etc/mesh/ca.crt 644 root",
        "/etc/mesh/secrets/ca.key 600 root",
        "/etc/mesh/secrets/tls/broker.key 600 root",
        "/etc/mesh/secrets/tls/store.key 600 root",
        "/etc/mesh/secrets/signing.key 600 root",
        "/etc/mesh/control.pub 644 root",
      ]);

      // The second machine holds the mesh's CA certificate (public) and another CA of its own.
      await run(["podman", "cp", `${first.name}:/etc/mesh/ca.crt`, `${tmp}/ca.crt`]);
      await second.copyIn(`${tmp}/ca.crt`, "/root/ca.crt");
      // Control's public key, as the first node's bundle made it (what `node enroll` hands over):
      // without it the second's link does not start.
      await run(["podman", "cp", `${first.name}:/etc/mesh/control.pub`, `${tmp}/control.pub`]);
      await second.copyIn(`${tmp}/control.pub`, "/root/control.pub");
      await second.exec([
        "sh",
        "-c",
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /root/other.key " +
        "-out /root/other.crt -days 30 -subj /CN=another-ca >/dev/null 2>&1",
      ]);
      const ask = async (
        port: number,
        options: { ca?: string; name?: string; starttls?: boolean } = {},
      ) => {
        const name = options.name ?? firstAddress;
        const check = /^[0-9.]+$/.test(name) ? "-verify_ip" : "-verify_hostname";
        const r = await second.exec([
          "sh",
          "-c",
          `timeout 20 openssl s_client ${options.starttls ? "-starttls postgres " : ""}` +
          `-connect ${firstAddress}:${port} -CAfile ${options.ca ?? "/root/ca.crt"} ` +
          `-verify_return_error ${check} ${name} </dev/null 2>&1`,
        ], { allowFailure: true });
        return { code: r.code, said: r.stdout };
      };
      const verified = (said: string) => said.includes("Verify return code: 0 (ok)");
      const serial = async (port: number, starttls = false) =>
        (await second.exec([
          "sh",
          "-c",
          `timeout 20 openssl s_client ${
            starttls ? "-starttls postgres " : ""
          }-connect ${firstAddress}:${port} ` +
          `</dev/null 2>/dev/null | openssl x509 -noout -serial`,
        ])).stdout.trim();

      for (const [port, starttls] of [[5671, false], [15671, false], [5432, true]] as const) {
        for (const name of [firstAddress, "mesh.example.test"]) {
          const r = await ask(port, { name, starttls });
          assert(r.code === 0 && verified(r.said), `${port} for ${name}: ${r.said}`);
        }
        const otherName = await ask(port, { name: "other.example.test", starttls });
        assert(
          otherName.code !== 0 && /hostname mismatch/.test(otherName.said),
          `${port} verified for a name it was not issued: ${otherName.said}`,
        );
        const otherCa = await ask(port, { ca: "/root/other.crt", starttls });
        assert(
          otherCa.code !== 0 &&
            /unable to get local issuer certificate|self-signed certificate in certificate chain/
              .test(otherCa.said),
          `${port} verified against another CA: ${otherCa.said}`,
        );
      }

      // Plain AMQP and HTTP are not offered to the network (the same probe finds 5671 open);
      // PostgreSQL refuses a connection without TLS from an address other than loopback.
      const open = async (port: number) =>
        (await second.exec(
          ["bash", "-c", `timeout 5 bash -c '</dev/tcp/${firstAddress}/${port}'`],
          {
            allowFailure: true,
          },
        )).code === 0;
      assertEquals(
        await Promise.all([5671, 15671, 5672, 15672].map(open)),
        [true, true, false, false],
        "open: 5671, 15671, 5672, 15672",
      );
      const plain = await first.exec([
        "sh",
        "-c",
        `PGPASSWORD=$(cat /etc/mesh/secrets/store) podman exec -i -e PGPASSWORD mesh-store psql -X -At ` +
        `"host=${firstAddress} user=postgres dbname=postgres sslmode=disable" -c 'select 1' 2>&1; ` +
        `PGPASSWORD=$(cat /etc/mesh/secrets/store) podman exec -i -e PGPASSWORD mesh-store psql -X -At ` +
        `"host=${firstAddress} user=postgres dbname=postgres sslmode=require" -c 'select 1' 2>&1`,
      ], { allowFailure: true });
      assert(/no pg_hba\.conf entry .* no encryption/.test(plain.stdout), plain.stdout);
      assert(/^1$/m.test(plain.stdout), `over TLS the store answers: ${plain.stdout}`);

      // Applied again: nothing to change.
      assertEquals(await apply(), [], "the second apply changed something");

      // A name added: both certificates reissued, both containers restarted to serve them.
      const before = [await serial(5671), await serial(5432, true)];
      await first.exec(["sh", "-c", "echo renewed.example.test >>/etc/mesh/public-names"]);
      const renewed = await apply();
      assertEquals(
        renewed.filter((id) => ["server-certificates", "store-tls", "broker-tls"].includes(id))
          .sort(),
        ["broker-tls", "server-certificates", "store-tls"],
        `after a name was added: ${renewed}`,
      );
      const after = [await serial(5671), await serial(5432, true)];
      assert(before[0] !== after[0] && before[1] !== after[1], `${before} -> ${after}`);
      for (const [port, starttls] of [[5671, false], [15671, false], [5432, true]] as const) {
        const r = await ask(port, { name: "renewed.example.test", starttls });
        assert(r.code === 0 && verified(r.said), `${port} for the added name: ${r.said}`);
      }
      assertEquals(await apply(), [], "the apply after the renewal changed something");

      // A node on the second machine links over AMQPS, verifying the broker against the mesh's CA
      // (enrolled by mesh-control on the first node, itself over TLS, verified): it reports, so
      // the board has heard it. With another CA in its place the link is refused, saying so.
      await first.copyIn(control, "/usr/local/sbin/mesh-control");
      // mesh-control's settings, as docs/operations.md writes them: TLS, verified (the CA at
      // /etc/mesh/ca.crt, found by default).
      const settings =
        `store=$(cat /etc/mesh/secrets/store) broker=$(cat /etc/mesh/secrets/broker); ` +
        `export MESH_DATABASE_URL="postgres://postgres:$store@127.0.0.1:5432/inventory?sslmode=verify-full" ` +
        `MESH_BROKER_URL="amqps://mesh:$broker@127.0.0.1:5671/%2F" ` +
        `MESH_BROKER_API_URL="https://mesh:$broker@127.0.0.1:15671"; `;
      const mc = (args: string) =>
        first.exec(["sh", "-c", `${settings}mesh-control ${args}`], {
          allowFailure: true,
          timeoutMs: 300_000,
        });
      const enrolled = await mc(
        `node enroll tls-second --system debian --public-broker amqps://${firstAddress}:5671/%2F`,
      );
      assertEquals(enrolled.code, 0, `node enroll: ${enrolled.stdout}\n${enrolled.stderr}`);
      const url = /amqps:\/\/tls-second:[^\s]+/.exec(enrolled.stdout)?.[0];
      assert(url, `node enroll printed no amqps:// URL: ${enrolled.stdout}`);
      await second.copyIn(host.path, "/usr/local/sbin/mesh-host");
      await second.exec([
        "sh",
        "-c",
        "mkdir -p /etc/mesh && cp /root/ca.crt /etc/mesh/ca.crt && install -m 0644 /root/control.pub /etc/mesh/control.pub",
      ]);
      const refusedLink = await second.exec([
        "sh",
        "-c",
        `timeout 30 mesh-host link --broker "$1" --every 30s 2>&1`,
        "sh",
        // The CA the URL names (enroll names the node's /etc/mesh/ca.crt) replaced by another.
        url.includes("cacertfile=")
          ? url.replace(/cacertfile=[^&]*/, "cacertfile=%2Froot%2Fother.crt")
          : `${url}${url.includes("?") ? "&" : "?"}cacertfile=%2Froot%2Fother.crt`,
      ], { allowFailure: true, timeoutMs: 120_000 });
      assert(
        /certificate/i.test(refusedLink.stdout) && !/connected to/.test(refusedLink.stdout) &&
          !refusedLink.stdout.includes(url.split("@")[0]!),
        `a link verifying against another CA: ${refusedLink.stdout}`,
      );
      await second.exec([
        "systemd-run",
        "--unit",
        "mesh-link-tls",
        "/usr/local/sbin/mesh-host",
        "link",
        "--broker",
        url,
        "--every",
        "30s",
      ]);
      // Report ingestion, as the control plane runs it.
      await first.exec([
        "systemd-run",
        "--unit",
        "mesh-ingest-tls",
        "sh",
        "-c",
        `${settings}exec mesh-control ingest`,
      ]);
      let verdict = "";
      for (let i = 0; i < 90 && !/not.pushed/.test(verdict); i++) {
        const board = await mc("board --json");
        const machines = (JSON.parse(board.stdout || "{}") as {
          machines?: { name: string; verdict?: string }[];
        }).machines ?? [];
        verdict = machines.find((m) => m.name === "tls-second")?.verdict ?? board.stderr;
        if (!/not.pushed/.test(verdict)) await new Promise((r) => setTimeout(r, 2000));
      }
      const journal = await second.exec([
        "journalctl",
        "--no-pager",
        "-n",
        "30",
        "-u",
        "mesh-link-tls",
      ], {
        allowFailure: true,
      });
      assert(/not.pushed/.test(verdict), `the node over amqps: ${verdict}\n${journal.stdout}`);
    } finally {
      stopForwarder();
      await Promise.all(machines.map((m) => m.destroy()));
      await run(["podman", "network", "rm", "-f", network], { allowFailure: true });
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  },
});
