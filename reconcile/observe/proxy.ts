/**
 * Web addresses the reverse proxy serves, read from Caddy's admin API (`GET /config/`, the
 * JSON config of Caddy 2: `apps.http.servers.<name>.{listen, routes, tls_connection_policies,
 * automatic_https}`, routes with `match[].host` and `handle[]`, recursing into `subroute`
 * handlers), and a probe of each served address over the network: the certificate chain
 * presented for the name (SNI), its leaf read and the chain judged as a careful client would
 * (`./cert_path.ts`, against the roots of `./trust.ts`), and, for redirects, the status and
 * `Location` without following.
 *
 * @module
 */

import { jsonTooDeep, jsonTooDeepMessage, MAX_JSON_DEPTH } from "../../lib/text_bounds.ts";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { z } from "zod";
import { messageOf } from "../../lib/atomic.ts";
import { findProgram } from "../../lib/accounts.ts";
import type { SourceStatus } from "./source.ts";
import type { CertificateSummary, ChainVerdict, TrustStore } from "./cert_path.ts";
import { handlersFor, type ServedHandler } from "./routes.ts";

/** The address a catch-all route (no host matcher) is recorded under. */
export const ANY_HOST = "*";

/** An address the proxy serves, and where. */
export interface ServedAddress {
  /** Host name from a `host` matcher, lowercased; {@linkcode ANY_HOST} for a catch-all. */
  host: string;
  /** The Caddy server (`apps.http.servers` key) serving it. */
  server: string;
  /** The server's listen addresses as configured, e.g. `[":443"]`. */
  listen: string[];
  /** Whether the server terminates TLS for it. */
  tls: boolean;
  /**
   * The handlers that answer for the host in this server (see `./routes.ts`); absent when not
   * read from a config (an address made by hand).
   */
  handlers?: ServedHandler[];
}

/** What the proxy's config says. */
export interface ProxyObservation {
  addresses: ServedAddress[];
  sources: SourceStatus[];
}

/** The answer of one request to a served address. */
export interface AddressProbe {
  host: string;
  /** `host:port` connected to. */
  target: string;
  /** Set when the connection or TLS handshake failed; then nothing else is. */
  error?: string;
  status?: number;
  /** `Location` header, as sent. */
  location?: string;
  /** Its validity window, subject and SANs (read from the DER), and what was judged of it. */
  certificate?: CertificateSummary & {
    /**
     * Whether the certificate covers the host name: an IP address against its IP SANs, a DNS
     * name against its DNS SANs (RFC 6125, one leftmost wildcard label; never the subject CN).
     */
    coversName: boolean;
    /**
     * The served chain judged against the trusted roots (absent when they could not be read,
     * or when the probe was not given them).
     */
    chain?: ChainVerdict;
  };
}

interface CaddyRoute {
  match?: { host?: string[] }[];
  handle?: { handler: string; routes?: CaddyRoute[] }[];
}

/**
 * The part of Caddy's config read here, built on the first read (not at import: a run on a
 * machine without a proxy never builds it, nor loads zod).
 */
function buildCaddyConfig(
  z: typeof import("zod").z,
  record: typeof import("../../lib/zod_record.ts").record,
) {
  const Route: z.ZodType<CaddyRoute> = z.lazy(() =>
    z.object({
      match: z.array(z.object({ host: z.array(z.string()).optional() }).loose()).optional(),
      handle: z.array(
        z.object({ handler: z.string(), routes: z.array(Route).optional() }).loose(),
      ).optional(),
    }).loose()
  );
  return z.object({
    apps: z.object({
      http: z.object({
        http_port: z.number().optional(),
        // `record`, not zod's own: a server named `__proto__` (Caddy names them freely; JSON.parse
        // makes an own key) is read as any other, not skipped unchecked with its addresses.
        servers: record(
          z.string(),
          z.object({
            listen: z.array(z.string()).optional(),
            routes: z.array(Route).optional(),
            tls_connection_policies: z.array(z.unknown()).optional(),
            automatic_https: z.object({
              disable: z.boolean().optional(),
              skip: z.array(z.string()).optional(),
            }).loose().optional(),
          }).loose(),
        ).optional(),
      }).loose().optional(),
    }).loose().optional(),
  }).loose().nullable();
}

/** What {@linkcode caddyConfig} reads. */
type CaddyConfig = z.output<ReturnType<typeof buildCaddyConfig>>;
let caddyConfigSchema: ReturnType<typeof buildCaddyConfig> | undefined;

/** The schema of Caddy's config, built once (zod loaded then). */
async function caddyConfig(): Promise<ReturnType<typeof buildCaddyConfig>> {
  if (caddyConfigSchema === undefined) {
    const { z } = await import("zod");
    caddyConfigSchema = buildCaddyConfig(z, (await import("../../lib/zod_record.ts")).record);
  }
  return caddyConfigSchema;
}

/** How a refused connection reads in Deno's fetch errors (`Connection refused (os error 111)`). */
const REFUSED = /connection refused|ECONNREFUSED/i;

/** Normalises `localhost:2019` or `http://host:port` to the admin API's base URL. */
export function adminUrl(admin: string): string {
  return /^https?:\/\//.test(admin) ? admin.replace(/\/+$/, "") : `http://${admin}`;
}

/** The deepest Caddy config read: routes inside handlers inside routes, far past any seen. */
const CADDY_CONFIG_DEPTH = 2 * MAX_JSON_DEPTH;

/**
 * Reads Caddy's running config through its admin API and lists the addresses it serves.
 * An admin API that does not answer, or answers with something else than Caddy's config, is a
 * `failed` source, never an empty list (its detail names `--caddy-admin none`); the one
 * exception is a machine without Caddy: no `caddy` on PATH and a refused connection is `absent`,
 * with that reason, as docker is where no daemon socket exists.
 */
export async function observeProxy(
  admin: string,
  options: { timeoutMs?: number } = {},
): Promise<ProxyObservation> {
  const url = `${adminUrl(admin)}/config/`;
  const method = `GET ${url}`;
  let body: unknown;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
    const text = await response.text();
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${text.trim().slice(0, 200)}`);
    body = JSON.parse(text);
    // Its schema recurses through nested routes: bounded before it does (docs/design.md,
    // "Hostile inputs", rule 3), at twice mesh's own bound, since Caddy nests routes in handlers.
    const deep = jsonTooDeep(text, CADDY_CONFIG_DEPTH);
    if (deep !== undefined) {
      throw new Error(`the config is ${jsonTooDeepMessage(deep, CADDY_CONFIG_DEPTH)}`);
    }
  } catch (error) {
    const said = messageOf(error);
    const caddy = findProgram("caddy");
    if (caddy === undefined && REFUSED.test(said)) {
      // Nothing is there and nothing could be: a machine without a proxy, like one without a
      // docker daemon. Every declared address is then missing, truthfully.
      return {
        addresses: [],
        sources: [{
          source: "caddy",
          state: "absent",
          method,
          detail: `Caddy is not installed (no caddy on PATH) and nothing answers at ${url}`,
        }],
      };
    }
    return {
      addresses: [],
      sources: [{
        source: "caddy",
        state: "failed",
        method,
        detail: `Cannot read the proxy config: ${said}${
          caddy === undefined ? "" : ` (Caddy is installed: ${caddy})`
        }; on a machine that runs no proxy, say so with --caddy-admin none`,
      }],
    };
  }
  const parsed = (await caddyConfig()).safeParse(body);
  if (!parsed.success) {
    return {
      addresses: [],
      sources: [{
        source: "caddy",
        state: "failed",
        method,
        detail: `Cannot read the proxy config: not Caddy's config shape (${
          parsed.error.issues[0]?.path.join(".")
        }: ${parsed.error.issues[0]?.message})`,
      }],
    };
  }
  const addresses = servedAddresses(parsed.data);
  return {
    addresses,
    sources: [{
      source: "caddy",
      state: "observed",
      method,
      detail: `${new Set(addresses.map((a) => a.host)).size} addresses served`,
    }],
  };
}

function servedAddresses(config: CaddyConfig): ServedAddress[] {
  const httpApp = config?.apps?.http;
  const httpPort = httpApp?.http_port ?? 80;
  const out: ServedAddress[] = [];
  for (const [server, srv] of Object.entries(httpApp?.servers ?? {})) {
    const listen = srv.listen ?? [];
    const hosts = new Set<string>();
    for (const route of srv.routes ?? []) collectHosts(route, hosts);
    const ports = listen.map(listenPort).filter((p): p is number => p !== undefined);
    // Caddy's automatic HTTPS (caddyhttp/autohttps.go): a server listening on any port other
    // than the HTTP port gets TLS when the host matchers of its top-level routes name a host
    // that is not in `automatic_https.skip`, unless disabled; explicit policies always mean TLS.
    const skip = new Set((srv.automatic_https?.skip ?? []).map((h) => h.toLowerCase()));
    const qualifying = (srv.routes ?? [])
      .flatMap((r) => (r.match ?? []).flatMap((m) => m.host ?? []))
      .map((h) => h.toLowerCase())
      .filter((h) => !skip.has(h));
    const tls = (srv.tls_connection_policies?.length ?? 0) > 0 ||
      (!srv.automatic_https?.disable && ports.some((p) => p !== httpPort) &&
        qualifying.length > 0);
    for (const host of hosts) {
      out.push({ host, server, listen, tls, handlers: handlersFor(srv.routes, host) });
    }
  }
  return out;
}

/** Adds every host a route serves; a route that matches no host anywhere serves any host. */
function collectHosts(route: CaddyRoute, into: Set<string>): void {
  const own = (route.match ?? []).flatMap((m) => m.host ?? []).map((h) => h.toLowerCase());
  const below = new Set<string>();
  for (const h of route.handle ?? []) for (const r of h.routes ?? []) collectHosts(r, below);
  if (own.length > 0) {
    for (const h of own) into.add(h);
    return;
  }
  if (below.size > 0) {
    for (const h of below) into.add(h);
    return;
  }
  if ((route.handle ?? []).some((h) => h.handler !== "subroute" && h.handler !== "vars")) {
    into.add(ANY_HOST);
  }
}

/** The TCP port of a Caddy listen address (`:443`, `0.0.0.0:443`, `tcp/[::]:443`). */
export function listenPort(listen: string): number | undefined {
  const m = /^(?:tcp[46]?\/)?(?:\[[^\]]*\]|[^:/]*):(\d+)(?:-\d+)?$/.exec(listen);
  return m ? Number(m[1]) : undefined;
}

/** Where to connect for a listen address: unspecified hosts become the loopback address. */
export function connectTarget(listen: string): { host: string; port: number } | undefined {
  const m = /^(?:tcp[46]?\/)?(\[[^\]]*\]|[^:/]*):(\d+)(?:-\d+)?$/.exec(listen);
  if (!m) return undefined;
  let host = m[1]!.replace(/^\[|\]$/g, "");
  if (host === "" || host === "0.0.0.0") host = "127.0.0.1";
  if (host === "::") host = "::1";
  return { host, port: Number(m[2]) };
}

/**
 * Sends one `GET /` for `address` to the first TCP listen address of its server, with the
 * name as SNI (a DNS name only: an IP address is sent as Host alone) and Host, without following
 * redirects and without refusing the handshake over the chain: every certificate presented is
 * read, then the chain is judged against `options.trust` ({@linkcode verifyChain}) at
 * `options.now` (ms since the epoch, default now). Never throws: a failure is the probe's
 * `error`. `node:http`, `node:https`, `node:crypto` (Deno's Node compatibility layer) and
 * `./cert_path.ts` are loaded here, on the first probe, not with the module: a run on a machine
 * without a proxy never loads them.
 */
export async function probeAddress(
  address: ServedAddress,
  options: { timeoutMs?: number; trust?: TrustStore; now?: number } = {},
): Promise<AddressProbe> {
  const target = address.listen.map(connectTarget).find((t) => t !== undefined);
  const host = address.host;
  if (target === undefined) {
    return {
      host,
      target: address.listen.join(","),
      error: "the server has no TCP listen address to connect to",
    };
  }
  const [{ default: http }, { default: https }, { X509Certificate }, path] = await Promise.all([
    import("node:http"),
    import("node:https"),
    import("node:crypto"),
    import("./cert_path.ts"),
  ]);
  const where = `${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
  return await new Promise((resolve) => {
    let settled = false;
    const done = (probe: AddressProbe) => {
      if (!settled) {
        settled = true;
        resolve(probe);
      }
    };
    const common = {
      host: target.host,
      port: target.port,
      path: "/",
      method: "GET",
      headers: { host: `${host}:${target.port}`, "user-agent": "mesh-reconcile" },
      agent: false as const,
      timeout: options.timeoutMs ?? 10_000,
    };
    const onResponse = (res: IncomingMessage) => {
      const probe: AddressProbe = { host, target: where, status: res.statusCode ?? 0 };
      if (typeof res.headers.location === "string") probe.location = res.headers.location;
      if (address.tls) {
        const served = presentedChain(res.socket as TLSSocket);
        if (served.length > 0) {
          try {
            const chain = served.map((raw) => new X509Certificate(raw));
            const cert = chain[0]!;
            const names = path.subjectAltNames(cert);
            probe.certificate = {
              ...path.summarize(cert, names),
              coversName: path.coversName(names, host),
            };
            if (options.trust !== undefined) {
              probe.certificate.chain = path.verifyChain(
                chain,
                options.trust,
                options.now ?? Date.now(),
              );
            }
          } catch (error) {
            probe.error = `the certificate presented could not be read: ${messageOf(error)}`;
          }
        } else {
          probe.error = "no certificate was presented";
        }
      }
      res.resume();
      done(probe);
    };
    const req = address.tls
      ? https.request({
        ...common,
        ...(path.isIpAddress(host) ? {} : { servername: host }),
        rejectUnauthorized: false,
      }, onResponse)
      : http.request(common, onResponse);
    req.on("timeout", () => {
      req.destroy(new Error(`no answer within ${common.timeout} ms`));
    });
    req.on("error", (error) => done({ host, target: where, error: messageOf(error) }));
    req.end();
  });
}

/**
 * Every certificate the server presented, DER, in the order served. Deno's `node:tls` links
 * `getPeerCertificate(true)`'s `issuerCertificate` through the chain as served (not as
 * verified); a repeated certificate ends the walk, as does the 32nd.
 */
export function presentedChain(socket: TLSSocket): Uint8Array[] {
  const out: Uint8Array[] = [];
  const seen = new Set<string>();
  let c = socket.getPeerCertificate?.(true) as
    | { raw?: Uint8Array; fingerprint256?: string; issuerCertificate?: unknown }
    | undefined;
  while (c?.raw && out.length < 32) {
    const key = c.fingerprint256 ?? String(out.length);
    if (seen.has(key)) break;
    seen.add(key);
    out.push(c.raw);
    c = c.issuerCertificate as typeof c;
  }
  return out;
}
