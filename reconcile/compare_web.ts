/**
 * The reverse proxy's addresses against the registry, one probe each (checks `address`,
 * `certificate`, `redirect`). Pure. Not compared when the `caddy` source failed; an `absent`
 * proxy serves nothing, so every declared address is missing, truthfully.
 *
 * - `address`: a declared address the proxy does not serve, or a plain-HTTP one whose listener
 *   does not answer, is missing; a served address (or catch-all, `*`) no entry declares is rogue.
 * - `certificate`: judged as a careful client would, for each declared TLS address: its listener
 *   does not answer; the leaf is not valid yet, expired, does not cover the name (IP address
 *   against IP SANs, DNS name against DNS SANs), or expires within the warning; the best path
 *   from the served chain to a trusted root needs an expired, not-yet-valid or non-CA issuer, ends
 *   at a root nothing trusts, or lacks an intermediate (`./observe/cert_path.ts`). Each its own
 *   finding, saying which and naming the certificate.
 *   The same for each TLS port an entry declares (`tls`: port and names, `./observe/tls_port.ts`),
 *   one finding per name its certificate does not cover, subject `NAME:PORT`.
 * - `redirect`: a declared redirect that answers without redirecting, or redirects elsewhere.
 *
 * Wildcard addresses and the catch-all are not probed by name, so only `address` judges them.
 *
 * @module
 */

import { formatDuration } from "../lib/duration.ts";
import type { CompareOptions, Finding, Observation } from "./finding.ts";
import type { Entry, Registry } from "./registry.ts";
import { type AddressProbe, ANY_HOST, type ServedAddress } from "./observe/proxy.ts";
import type { TlsProbe } from "./observe/tls_port.ts";

/** One declared address with what the proxy serves for it and what its probe got. */
interface DeclaredAddress {
  service: string;
  entry: Entry;
  address: string;
  /** The first server serving it; absent when none does. */
  served?: ServedAddress;
  /** Its probe, when it was probed by name (not a wildcard or the catch-all). */
  probe?: AddressProbe;
}

/** Every declared address in registry order, or none when the proxy's source failed. */
function declaredAddresses(registry: Registry, observation: Observation): DeclaredAddress[] {
  if (observation.sources.some((s) => s.source === "caddy" && s.state === "failed")) return [];
  const served = new Map<string, ServedAddress>();
  for (const a of observation.addresses) if (!served.has(a.host)) served.set(a.host, a);
  return Object.entries(registry.services).flatMap(([service, entry]) =>
    (entry.web ?? []).map((address) => {
      const s = served.get(address);
      const probe = address === ANY_HOST || address.startsWith("*.")
        ? undefined
        : observation.probes.find((p) => p.host === address);
      return {
        service,
        entry,
        address,
        ...(s ? { served: s } : {}),
        ...(s && probe ? { probe } : {}),
      };
    })
  );
}

const notAnswering = (d: DeclaredAddress) =>
  `${d.address} is configured but does not answer at ${d.probe!.target}: ${d.probe!.error}`;

/** Check `address`: declared and not served (or not answering, plain HTTP); served, undeclared. */
export function compareAddresses(registry: Registry, observation: Observation): Finding[] {
  if (observation.sources.some((s) => s.source === "caddy" && s.state === "failed")) return [];
  const findings: Finding[] = [];
  const declared = new Set<string>();
  for (const d of declaredAddresses(registry, observation)) {
    declared.add(d.address);
    const base = {
      check: "address" as const,
      direction: "missing" as const,
      service: d.service,
      subject: d.address,
    };
    if (d.served === undefined) {
      findings.push({
        ...base,
        detail: `${
          d.address === ANY_HOST ? "a catch-all route" : d.address
        } is not served by the proxy`,
      });
    } else if (!d.served.tls && d.probe?.error !== undefined) {
      findings.push({ ...base, detail: notAnswering(d) });
    }
  }
  const served = new Map<string, ServedAddress>();
  for (const a of observation.addresses) if (!served.has(a.host)) served.set(a.host, a);
  for (const [host, s] of served) {
    if (declared.has(host)) continue;
    findings.push({
      check: "address",
      direction: "rogue",
      subject: host,
      detail: `${
        host === ANY_HOST ? "a catch-all route (any host name)" : host
      } is served (server ${s.server} on ${s.listen.join(", ")}) and no entry declares it`,
    });
  }
  return findings;
}

/**
 * Check `certificate`: what each declared TLS address presents, and each TLS port the registry
 * declares (`tls`), judged as a client would.
 */
export function compareCertificates(
  registry: Registry,
  observation: Observation,
  options: CompareOptions,
): Finding[] {
  const web = declaredAddresses(registry, observation).flatMap((d) => {
    if (!d.served?.tls || d.probe === undefined) return [];
    if (d.probe.error !== undefined) {
      return [{
        check: "certificate" as const,
        direction: "missing" as const,
        service: d.service,
        subject: d.address,
        detail: notAnswering(d),
      }];
    }
    return d.probe.certificate ? certificateFindings(d.service, d.probe, options) : [];
  });
  return [...web, ...tlsPortFindings(observation.tlsProbes ?? [], options)];
}

/** The `certificate` findings of the TLS ports: each subject `NAME:PORT` (its first name). */
function tlsPortFindings(
  probes: readonly TlsProbe[],
  options: Pick<CompareOptions, "certWarnMs" | "now">,
): Finding[] {
  return probes.flatMap((p) => {
    const base = {
      check: "certificate" as const,
      direction: "missing" as const,
      service: p.service,
      subject: `${p.names[0]!.includes(":") ? `[${p.names[0]}]` : p.names[0]}:${p.port}`,
    };
    if (p.error !== undefined || p.certificate === undefined) {
      return [{
        ...base,
        detail: `TLS port ${p.port} (${p.names.join(", ")}) does not answer at ${p.target}: ${
          p.error ?? "no certificate was read"
        }`,
      }];
    }
    const cert = p.certificate;
    return [
      ...cert.uncovered.map((name) => ({
        ...base,
        detail: `the certificate presented on port ${p.port} does not cover ${name} (it names ${
          cert.subjectAltName ||
          `no subject alternative name; its subject ${cert.subject || "is empty"} is not read`
        })`,
      })),
      ...windowAndChain(base, cert, `on port ${p.port}`, options),
    ];
  });
}

/** Check `redirect`: a declared redirect's answer, compared as a URL. */
export function compareRedirects(registry: Registry, observation: Observation): Finding[] {
  return declaredAddresses(registry, observation).flatMap((d) => {
    if (d.probe === undefined || d.probe.error !== undefined) return [];
    if (d.entry.kind !== "site" || d.entry.redirect === undefined) return [];
    const f = redirectFinding(d.service, d.probe, d.entry.redirect, d.served!.tls);
    return f ? [f] : [];
  });
}

function certificateFindings(
  service: string,
  probe: AddressProbe,
  options: Pick<CompareOptions, "certWarnMs" | "now">,
): Finding[] {
  const cert = probe.certificate!;
  const out: Finding[] = [];
  const base = {
    check: "certificate" as const,
    direction: "missing" as const,
    service,
    subject: probe.host,
  };
  if (!cert.coversName) {
    out.push({
      ...base,
      detail: `the certificate presented for ${probe.host} does not cover it (it names ${
        cert.subjectAltName ||
        `no subject alternative name; its subject ${cert.subject || "is empty"} is not read`
      })`,
    });
  }
  return [...out, ...windowAndChain(base, cert, `for ${probe.host}`, options)];
}

/**
 * The findings of a served chain's problems and of the leaf's validity window (not yet valid,
 * expired, expiring within the warning), each said of the certificate `where` (`for HOST`,
 * `on port N`).
 */
function windowAndChain(
  base: Omit<Finding, "detail">,
  cert: { notBefore: string; notAfter: string; chain?: { problems: string[] } },
  where: string,
  options: Pick<CompareOptions, "certWarnMs" | "now">,
): Finding[] {
  const out: Finding[] = [];
  for (const problem of cert.chain?.problems ?? []) {
    out.push({ ...base, detail: `the certificate chain ${where} ${problem}` });
  }
  const starts = Date.parse(cert.notBefore) - options.now;
  if (starts > 0) {
    out.push({
      ...base,
      detail: `the certificate ${where} is not valid yet: its validity starts in ${
        formatDuration(starts)
      } (at ${cert.notBefore}), and a client refuses it until then`,
    });
  }
  const left = Date.parse(cert.notAfter) - options.now;
  if (left <= 0) {
    out.push({ ...base, detail: `the certificate ${where} expired at ${cert.notAfter}` });
  } else if (left <= options.certWarnMs) {
    out.push({
      ...base,
      detail: `the certificate ${where} expires in ${
        formatDuration(left)
      } (at ${cert.notAfter}), within the ${formatDuration(options.certWarnMs)} warning`,
    });
  }
  return out;
}

function redirectFinding(
  service: string,
  probe: AddressProbe,
  target: string,
  tls: boolean,
): Finding | undefined {
  const base = {
    check: "redirect" as const,
    direction: "missing" as const,
    service,
    subject: probe.host,
  };
  const status = probe.status ?? 0;
  if (status < 300 || status > 399 || probe.location === undefined) {
    return {
      ...base,
      detail: `${probe.host} answers ${status} instead of redirecting to ${target}`,
    };
  }
  const asked = `${tls ? "https" : "http"}://${probe.host}/`;
  let got: string;
  try {
    got = new URL(probe.location, asked).href;
  } catch {
    got = probe.location;
  }
  if (got !== new URL(target).href) {
    return { ...base, detail: `${probe.host} redirects to ${got}, not to ${target}` };
  }
  return undefined;
}
