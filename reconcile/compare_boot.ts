/**
 * The third direction: what the next boot would produce, against the registry. A retired service
 * (no entry claims its container) that would come back is `rogue` at boot; a declared service
 * that would not come back is `missing` at boot; a declared daemon's unit must start at boot.
 * Findings carry check `boot`. Pure: it reads the observation ({@linkcode ./observe/boot.ts}).
 *
 * A container comes back when at least one of these holds, each read from the machine:
 * - podman: its restart policy is one that `podman-restart.service` starts (the policies are read
 *   from that unit's own `ExecStart=`, `--filter restart-policy=...`; podman 4.3 ships `always`)
 *   and that unit starts at boot;
 * - docker: `always`, or `unless-stopped` while it runs now, and `docker.service` starts at boot;
 * - a unit that starts at boot runs it: its `PODMAN_SYSTEMD_UNIT` label names the unit, or the
 *   unit's `ExecStart=` is `podman|docker run --name NAME` or `start NAME` (a `podman generate
 *   systemd --new` unit brings its container back even when it does not exist today);
 * - the quadlet generator would create a unit that runs it and links it into a target.
 * For a rootless account all of these also need its user manager to start at boot (linger).
 *
 * A unit starts at boot when its unit file state is `enabled` and some unit wants, requires or
 * triggers it (an `[Install]` holding only `Alias=` reads `enabled` too, and nothing starts it);
 * a `static`, `indirect` or `generated` one when some unit wants, requires or triggers it (`WantedBy=`, `RequiredBy=`,
 * `TriggeredBy=` as systemd has them loaded; one level, not followed further). Every other state
 * is said in its own words. The bounded set compared is containers and declared daemons: the
 * machine's other enabled units (getty, cron, apt's timers) are not the registry's business.
 * Batch entries are graded by the `timer` check, which already asserts their timer starts at
 * boot; their containers are theirs here too, never rogue.
 *
 * @module
 */

import type { Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import { type BootObservation, type BootUnit, containerOf } from "./observe/boot.ts";
import type { UnitFileState } from "../lib/systemd.ts";
import { compareAccountKeys } from "./observe/name_order.ts";

/** Why a unit in each unit file state does or does not start at boot (systemctl(1)). */
export const BOOT_WORDS: Record<UnitFileState, "starts" | "if-pulled" | string> = {
  enabled: "starts",
  static: "if-pulled",
  indirect: "if-pulled",
  generated: "if-pulled",
  "enabled-runtime": "enabled-runtime: enabled only under /run, gone at the next boot",
  linked: "linked: linked with systemctl link, not enabled",
  "linked-runtime": "linked-runtime: linked under /run only, not enabled",
  alias: "alias: systemd says only that this name is an alias; declare the unit it names",
  masked: "masked: it cannot be started at all",
  "masked-runtime": "masked-runtime: masked until the next boot, and not enabled",
  disabled: "disabled",
  transient: "transient: created at runtime and gone at the next boot",
  bad: "bad: systemd cannot read its unit file",
};

/** Whether `unit` starts at boot, and why (or why not) in systemd's words. */
export function startsAtBoot(unit: BootUnit): { starts: boolean; why: string } {
  if (unit.load === "not-found") {
    return { starts: false, why: `${unit.unit} does not exist (LoadState=not-found)` };
  }
  const word = BOOT_WORDS[unit.unitFile as UnitFileState];
  const name = unit.id !== unit.unit && unit.id ? `${unit.unit} (${unit.id})` : unit.unit;
  if (word === "starts") {
    // `enabled` is also what an [Install] holding only Alias= reads: something must pull it in.
    const by = [...unit.wantedBy, ...unit.requiredBy, ...unit.triggeredBy];
    return by.length > 0 ? { starts: true, why: `${name} is enabled` } : {
      starts: false,
      why: `${name} is enabled, but nothing wants, requires or triggers it (its [Install] ` +
        `section names no target, only Alias= say), so nothing starts it at boot`,
    };
  }
  if (word === "if-pulled") {
    const by = [...unit.wantedBy, ...unit.requiredBy, ...unit.triggeredBy];
    return by.length > 0
      ? { starts: true, why: `${name} is ${unit.unitFile}, pulled in by ${by.join(", ")}` }
      : {
        starts: false,
        why: `${name} is ${unit.unitFile} and nothing wants, requires or triggers it`,
      };
  }
  return { starts: false, why: `${name} is ${word ?? `in unknown state "${unit.unitFile}"`}` };
}

/** The restart policies `podman-restart.service` starts, read from its `ExecStart=`. */
export function restartPolicies(unit: BootUnit): Set<string> | "all" {
  const policies = new Set<string>();
  for (const argv of unit.execStart) {
    const start = argv.indexOf("start");
    if (start < 0 || !argv.includes("--all")) continue;
    let filtered = false;
    for (let i = start + 1; i < argv.length; i++) {
      const a = argv[i]!;
      const value = a === "--filter" ? argv[i + 1] : a.startsWith("--filter=") ? a.slice(9) : "";
      if (value?.startsWith("restart-policy=")) {
        filtered = true;
        policies.add(value.slice("restart-policy=".length));
      }
    }
    if (!filtered) return "all";
  }
  return policies;
}

/** What brings each container back (`account/name` to reasons), from one observation. */
export function comesBack(boot: BootObservation): Map<string, string[]> {
  const back = new Map<string, string[]>();
  const add = (account: string, name: string, why: string) => {
    const key = `${account}/${name}`;
    back.set(key, [...(back.get(key) ?? []), why]);
  };
  const unitOf = (account: string, name: string) =>
    boot.units.find((u) => u.account === account && u.unit === name);
  for (const [account, manager] of Object.entries(boot.startsAtBoot)) {
    if (!manager) continue; // no systemd, or a user manager that does not start at boot
    const restart = unitOf(account, "podman-restart.service");
    const restartStarts = restart !== undefined && startsAtBoot(restart).starts;
    const policies = restart ? restartPolicies(restart) : new Set<string>();
    const docker = unitOf(account, "docker.service");
    const dockerStarts = docker !== undefined && startsAtBoot(docker).starts;
    for (const c of boot.containers.filter((c) => c.account === account)) {
      if (
        c.runtime === "podman" && restartStarts && (policies === "all" || policies.has(c.restart))
      ) {
        add(
          account,
          c.name,
          `restart policy "${c.restart}", started at boot by podman-restart.service`,
        );
      }
      if (c.runtime === "docker" && dockerStarts) {
        if (c.restart === "always") add(account, c.name, `docker restart policy "always"`);
        if (
          c.restart === "unless-stopped" && ["running", "restarting", "paused"].includes(c.state)
        ) {
          add(account, c.name, `docker restart policy "unless-stopped", and it runs now`);
        }
      }
      if (c.systemdUnit !== undefined) {
        const u = unitOf(account, c.systemdUnit);
        if (u !== undefined && startsAtBoot(u).starts) {
          add(account, c.name, `its unit ${c.systemdUnit} starts at boot (${startsAtBoot(u).why})`);
        }
      }
    }
    for (const u of boot.units.filter((u) => u.account === account)) {
      if (u.unit === "podman-restart.service" || u.unit === "docker.service") continue;
      if (!startsAtBoot(u).starts) continue;
      for (const argv of u.execStart) {
        const name = containerOf(argv, u.unit);
        if (name !== undefined) {
          add(
            account,
            name,
            `the enabled unit ${u.unit} runs it (${argv.slice(0, 3).join(" ")} ...)`,
          );
        }
      }
    }
    for (const q of boot.quadlet.filter((q) => q.account === account)) {
      if (q.container === undefined || q.wantedBy.length === 0) continue;
      add(
        account,
        q.container,
        `the quadlet generator creates ${q.unit}, wanted by ${q.wantedBy.join(", ")}`,
      );
    }
  }
  for (const [key, reasons] of back) back.set(key, [...new Set(reasons)]);
  return back;
}

/**
 * The `boot` findings. Compared only when the observation includes the boot view
 * (`observation.boot`; not with `--boot none`); an account whose boot sources failed is not
 * compared (missing data is not evidence), which includes every account of a machine not booted
 * with systemd (its init is not read); an absent source (a user manager that does not linger, no
 * quadlet generator) means nothing comes back through it, so what is declared there is missing.
 */
export function compareBoot(registry: Registry, observation: Observation): Finding[] {
  const boot = observation.boot;
  if (boot === undefined) return [];
  const findings: Finding[] = [];
  const sourceOf = (source: string, account: string) =>
    observation.sources.find((s) => s.source === source && s.account === account);
  const failed = (account: string) =>
    observation.sources.some((s) =>
      s.account === account && s.state === "failed" &&
      ["boot-units", "boot-podman", "boot-docker", "quadlet"].includes(s.source)
    );
  const back = comesBack(boot);
  const claimed = new Set<string>();
  const entries = Object.entries(registry.services);

  for (const [name, entry] of entries) {
    if (!("container" in entry) || entry.container === undefined || entry.user === undefined) {
      continue;
    }
    claimed.add(`${entry.user}/${entry.container}`);
    if (entry.kind === "batch") continue; // graded by its timer (check "timer")
    if (failed(entry.user)) continue;
    const key = `${entry.user}/${entry.container}`;
    if (back.has(key)) continue;
    findings.push({
      check: "boot",
      direction: "missing",
      service: name,
      subject: key,
      detail: `container "${entry.container}" of account ${entry.user} would not come back after ` +
        `a reboot: ${whyNot(boot, entry.user, entry.container, sourceOf)}`,
    });
  }

  for (const [name, entry] of entries) {
    if (entry.kind !== "daemon") continue;
    const d = boot.daemons.find((x) => x.entry === name);
    if (d === undefined) continue; // not asked (a library caller's own observation)
    if (sourceOf("boot-units", d.account)?.state === "failed") continue;
    const missing = (subject: string, detail: string) =>
      findings.push({ check: "boot", direction: "missing", service: name, subject, detail });
    const units = sourceOf("boot-units", d.account);
    if (units?.state !== "observed") {
      // A user manager that does not start at boot (not lingering): nothing starts it.
      missing(
        d.unit ?? name,
        `daemon ${name}${d.unit ? ` (${d.unit})` : ""} would not come back after a reboot: ${
          units?.detail ?? "its manager was not asked"
        }`,
      );
      continue;
    }
    if (d.unit === undefined) {
      missing(name, `daemon ${name} would not come back after a reboot: ${d.how}`);
      continue;
    }
    const u = boot.units.find((x) => x.account === d.account && x.unit === d.unit);
    const verdict = u === undefined
      ? { starts: false, why: `systemd said nothing about ${d.unit}` }
      : startsAtBoot(u);
    if (!verdict.starts) {
      missing(
        d.unit,
        `daemon ${name} would not come back after a reboot: ${verdict.why} (${d.how})`,
      );
    }
  }

  for (const [key, reasons] of [...back].sort((a, b) => compareAccountKeys(a[0], b[0]))) {
    if (claimed.has(key)) continue;
    const account = key.slice(0, key.indexOf("/"));
    if (failed(account)) continue;
    findings.push({
      check: "boot",
      direction: "rogue",
      subject: key,
      detail: `container "${key.slice(account.length + 1)}" of account ${account} is declared by ` +
        `no entry and would come back after a reboot: ${reasons.join("; ")}`,
    });
  }
  return findings;
}

function whyNot(
  boot: BootObservation,
  account: string,
  name: string,
  sourceOf: (source: string, account: string) => { state: string; detail: string } | undefined,
): string {
  const units = sourceOf("boot-units", account);
  if (units !== undefined && units.state === "absent") return units.detail;
  const parts: string[] = [];
  const here = boot.containers.filter((c) => c.account === account && c.name === name);
  if (here.length === 0) parts.push("no container of that name exists now");
  const restart = boot.units.find((u) =>
    u.account === account && u.unit === "podman-restart.service"
  );
  for (const c of here) {
    const policy = c.restart === "" ? "none" : c.restart;
    if (c.runtime === "podman") {
      const verdict = restart ? startsAtBoot(restart) : undefined;
      const policies = restart ? restartPolicies(restart) : undefined;
      parts.push(
        `it exists (${c.state}) with restart policy "${policy}"${
          policies === undefined
            ? ", and there is no podman-restart.service"
            : policies !== "all" && !policies.has(c.restart)
            ? `, which podman-restart.service does not start (it starts ${
              [...policies].map((p) => `"${p}"`).join(", ") || "none"
            })`
            : !verdict!.starts
            ? `, but ${verdict!.why}`
            : ""
        }`,
      );
    } else parts.push(`it exists (${c.state}) with docker restart policy "${policy}"`);
    if (c.systemdUnit !== undefined) {
      const u = boot.units.find((x) => x.account === account && x.unit === c.systemdUnit);
      parts.push(u ? startsAtBoot(u).why : `its unit ${c.systemdUnit} was not read`);
    }
  }
  parts.push("no unit that starts at boot runs it");
  const quadlet = sourceOf("quadlet", account);
  if (quadlet?.state === "absent") parts.push(`quadlet: ${quadlet.detail}`);
  else if (quadlet?.state === "observed") {
    const q = boot.quadlet.find((x) => x.account === account && x.container === name);
    parts.push(
      q === undefined
        ? "no quadlet unit creates it"
        : `the quadlet unit ${q.unit} creates it but no target wants it ([Install] has no WantedBy=)`,
    );
  }
  return parts.join("; ");
}
