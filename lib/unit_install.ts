/**
 * What a systemd unit's `[Install]` section says would pull it in once enabled (systemd.unit(5),
 * "[Install] Section Options"): `WantedBy=`, `RequiredBy=` and `UpheldBy=` make `systemctl
 * enable` link the unit into those units. A section holding only `Alias=` (or `Also=`) makes
 * `systemctl enable` exit 0 and `UnitFileState` read `enabled` while nothing starts the unit at
 * boot: "enabled" alone does not say "starts at boot".
 *
 * Read from the unit's fragment and its drop-ins (`systemctl show -p FragmentPath,DropInPaths`),
 * in that order; an empty assignment (`WantedBy=`) resets the list, as systemd reads it.
 *
 * @module
 */

/** The `[Install]` keys whose targets pull the unit in when it is enabled. */
export const PULLING_KEYS = ["WantedBy", "RequiredBy", "UpheldBy"] as const;

/** The `[Install]` section of a unit, key to values (whitespace-separated lists split). */
export type InstallSection = Map<string, string[]>;

/**
 * Parses the `[Install]` section out of unit file texts given in the order systemd reads them
 * (fragment, then drop-ins). Continuation lines (`\` at the end) are joined; comments skipped.
 */
export function parseInstallSection(texts: readonly string[]): InstallSection {
  const install: InstallSection = new Map();
  for (const text of texts) {
    let inInstall = false;
    for (const raw of text.replace(/\\\n/g, " ").split("\n")) {
      const line = raw.trim();
      if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
      const section = /^\[(.+)\]$/.exec(line);
      if (section) {
        inInstall = section[1] === "Install";
        continue;
      }
      if (!inInstall) continue;
      const eq = line.indexOf("=");
      if (eq <= 0) continue;
      const key = line.slice(0, eq).trim();
      const value = line.slice(eq + 1).trim();
      if (value === "") install.set(key, []);
      else install.set(key, [...(install.get(key) ?? []), ...value.split(/\s+/)]);
    }
  }
  return install;
}

/**
 * Reads the `[Install]` section of a unit from its fragment and drop-ins (absolute paths as
 * `systemctl show` prints them; `DropInPaths` is space-separated).
 *
 * @throws {Error} naming the file when one cannot be read.
 */
export async function readInstallSection(
  fragmentPath: string,
  dropInPaths: string,
): Promise<InstallSection> {
  const paths = [fragmentPath, ...dropInPaths.split(/\s+/)].filter((p) => p !== "");
  const texts: string[] = [];
  for (const path of paths) {
    try {
      texts.push(await Deno.readTextFile(path));
    } catch (error) {
      throw new Error(
        `Cannot read unit file "${path}": ${error instanceof Error ? error.message : error}`,
      );
    }
  }
  return parseInstallSection(texts);
}

/** The units `install` would link this one into when enabled (`WantedBy=` etc.), in order. */
export function pullingTargets(install: InstallSection): string[] {
  return PULLING_KEYS.flatMap((k) => install.get(k) ?? []);
}

/**
 * Why enabling a unit with this `[Install]` section would start nothing at boot, or undefined
 * when it names targets that pull it in.
 */
export function aliasOnlyReason(unit: string, install: InstallSection): string | undefined {
  if (pullingTargets(install).length > 0) return undefined;
  const named = [...install.keys()].filter((k) => (install.get(k) ?? []).length > 0)
    .map((k) => `${k}=${install.get(k)!.join(" ")}`);
  return `the [Install] section of ${unit} names no WantedBy=, RequiredBy= or UpheldBy=${
    named.length > 0 ? ` (only ${named.join(", ")})` : ""
  }: systemctl enable would exit 0 and ${
    named.some((n) => n.startsWith("Alias=")) ? "make only the alias" : "link it nowhere"
  }, and nothing would start it at boot`;
}
