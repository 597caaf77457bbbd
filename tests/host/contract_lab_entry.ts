/**
 * The generic applier contract (tests/host/contract.ts) inside a lab machine, for the appliers
 * that need a real init or a real package manager: service (on whichever manager booted the
 * machine, as host/platform.ts detects it), package with dpkg and apt, and the path appliers.
 * Run by tests/host/applier_contract_test.ts as
 * `deno run -A --config /mesh/deno.json /mesh/tests/host/contract_lab_entry.ts`; prints
 * `ok <case>` per case and exits 1 on the first broken promise.
 *
 * @module
 */

import { type ContractCase, runContract } from "./contract.ts";
import { debian } from "../../systems/debian/mod.ts";
import { run } from "../../lib/command.ts";
import { serviceManager } from "../../host/platform.ts";
import type { Resource } from "../../lib/declaration.ts";

const UNIT = `[Unit]
Description=mesh contract

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
`;

const INIT_SCRIPT = `#!/sbin/openrc-run
description="mesh contract"
command=/bin/sleep
command_args=infinity
command_background=yes
pidfile=/run/meshcontract.pid
`;

const sh = async (script: string) =>
  (await run(["sh", "-c", script], { allowFailure: true })).stdout.trim();

async function main(): Promise<number> {
  const manager = (await serviceManager()).manager;
  if (manager === undefined) throw new Error("no service manager booted this lab machine");
  const systemd = manager === "systemd";
  const unitFile: Resource = systemd
    ? {
      id: "unit",
      type: "file",
      path: "/etc/systemd/system/meshcontract.service",
      content: UNIT,
      mode: "0644",
    }
    : {
      id: "unit",
      type: "file",
      path: "/etc/init.d/meshcontract",
      content: INIT_SCRIPT,
      mode: "0755",
    };
  const unit = systemd ? "meshcontract.service" : "meshcontract";
  const serviceState = systemd
    ? `systemctl is-active ${unit}; systemctl is-enabled ${unit}`
    : `rc-service ${unit} status; rc-update show default | grep -c ${unit}`;
  const cases: ContractCase[] = [
    {
      name: `service on ${manager}`,
      system: debian,
      before: [unitFile],
      resource: { id: "svc", type: "service", unit, state: "running", boot: "enabled" },
      snapshot: () => sh(serviceState),
      drift: async () => {
        await sh(systemd ? `systemctl stop ${unit}` : `rc-service ${unit} stop`);
      },
      // A service leaving the declaration is left as it is ("forgotten"); by hand, it is
      // stopped and disabled first.
      removeByHand: async () => {
        await sh(
          systemd
            ? `systemctl disable --now ${unit}`
            : `rc-service ${unit} stop; rc-update del ${unit} default`,
        );
      },
    },
    {
      name: `package on ${manager}`,
      system: debian,
      resource: { id: "pkg", type: "package", package: "hello" },
      snapshot: () => sh("dpkg-query -W -f '${Status}' hello 2>&1"),
      drift: async () => {
        await sh("DEBIAN_FRONTEND=noninteractive apt-get remove -y -q hello");
      },
      removeByHand: async () => {
        await sh("DEBIAN_FRONTEND=noninteractive apt-get remove -y -q hello");
      },
    },
    {
      name: `directory on ${manager}`,
      system: debian,
      resource: { id: "d", type: "directory", path: "/srv/contract", mode: "0750" },
      snapshot: () => sh("stat -c '%a %u %g' /srv/contract 2>&1"),
      drift: async () => {
        await sh("chmod 0777 /srv/contract");
      },
      removeByHand: async () => {
        await sh("rmdir /srv/contract");
      },
    },
    {
      name: `file on ${manager}`,
      system: debian,
      resource: { id: "f", type: "file", path: "/srv/contract.conf", content: "x\n", mode: "0644" },
      snapshot: () => sh("stat -c '%a %u %g' /srv/contract.conf 2>&1; cat /srv/contract.conf"),
      drift: async () => {
        await sh("echo drift > /srv/contract.conf");
      },
      removeByHand: async () => {
        await sh("rm /srv/contract.conf");
      },
    },
  ];
  for (const [i, c] of cases.entries()) {
    const seen = await runContract(c, `/var/lib/mesh/contract-${i}`);
    console.log(`ok ${c.name}\n  ${seen.join("\n  ")}`);
  }
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (error) {
    console.log(`FAILED ${error instanceof Error ? error.message : String(error)}`);
    Deno.exit(1);
  }
}
