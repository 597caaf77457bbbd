/**
 * The proxy's served routes against what the registry renders (check `route`). Pure.
 *
 * For each declared address the proxy serves, the handlers that answer for it in each server's
 * config ({@linkcode ServedAddress.handlers}) must be exactly the route {@linkcode routeOf}
 * renders: one `reverse_proxy` whose upstreams all dial a loopback address (`127.0.0.0/8`,
 * `::1`, `localhost`) on the entry's first port; one `file_server` whose root is the first
 * state directory; or one redirect to the declared target (the status is not compared: the
 * registry does not declare one). Anything else (another handler, another upstream, a second
 * handler such as a path routed elsewhere) is a `missing` finding: the rendered route is not
 * what is served. The check is named `route`, not `address`, because the address is served;
 * what differs is the route Caddy has for it.
 *
 * Not compared here: an address not served, or served and not declared (the `address` check);
 * an entry whose route cannot be rendered (it declares no port, redirect or state; `render
 * caddy` names it, and only its address is checked).
 *
 * @module
 */

import type { Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import { type RenderedRoute, routeOf } from "./render.ts";
import type { ServedHandler } from "./observe/routes.ts";
import { isLoopback } from "../lib/wire_trust.ts";

/** Placeholders in a configured `Location`, as Caddy fills them for `GET /` (what a probe asks). */
const REQUEST_ROOT: Record<string, string> = {
  "{http.request.uri}": "/",
  "{http.request.uri.path}": "/",
  "{http.request.uri.query}": "",
  "{uri}": "/",
  "{path}": "/",
  "{query}": "",
};

/** Compares the served routes of declared addresses with the rendered ones. */
export function compareRoutes(registry: Registry, observation: Observation): Finding[] {
  if (observation.sources.some((s) => s.source === "caddy" && s.state !== "observed")) return [];
  const findings: Finding[] = [];
  for (const [service, entry] of Object.entries(registry.services)) {
    if (!entry.web?.length) continue;
    const rendered = routeOf(entry);
    if ("problem" in rendered) continue;
    for (const address of entry.web) {
      for (const served of observation.addresses.filter((a) => a.host === address)) {
        if (served.handlers === undefined) continue;
        if (matches(served.handlers, rendered, address)) continue;
        findings.push({
          check: "route",
          direction: "missing",
          service,
          subject: address,
          detail: `${address} is served by ${describeServed(served.handlers)} (server ${
            JSON.stringify(served.server)
          }), not by ${describeRendered(rendered)} as the registry renders it`,
        });
      }
    }
  }
  return findings;
}

function matches(handlers: ServedHandler[], rendered: RenderedRoute, host: string): boolean {
  if (handlers.length !== 1) return false;
  const h = handlers[0]!;
  switch (rendered.kind) {
    case "reverse_proxy":
      return h.kind === "reverse_proxy" && h.transport === undefined &&
        h.upstreams.length > 0 && h.upstreams.every((d) => isLoopbackPort(d, rendered.port));
    case "file_server":
      return h.kind === "file_server" && h.root !== undefined &&
        trimSlash(h.root) === trimSlash(rendered.root);
    case "redirect":
      return h.kind === "redirect" && resolveLocation(h.to, host) === rendered.to;
  }
}

function trimSlash(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, "") : path;
}

/** Whether a `dial` address is a loopback address (lib/wire_trust.ts's one rule) on `port`. */
export function isLoopbackPort(dial: string, port: number): boolean {
  const m = /^(?:tcp[46]?\/)?(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(dial);
  return m !== null && Number(m[2]) === port && isLoopback(m[1]!);
}

/** A configured `Location` as the answer to `GET /` would carry it, resolved to a full URL. */
function resolveLocation(location: string, host: string): string {
  let filled = location;
  for (const [placeholder, value] of Object.entries(REQUEST_ROOT)) {
    filled = filled.replaceAll(placeholder, value);
  }
  filled = filled.replaceAll("{http.request.host}", host).replaceAll("{host}", host);
  try {
    return new URL(filled, `https://${host}/`).href;
  } catch {
    return filled;
  }
}

function describeServed(handlers: ServedHandler[]): string {
  if (handlers.length === 0) return "no handler (an empty response)";
  return handlers.map((h) => {
    switch (h.kind) {
      case "reverse_proxy":
        return `reverse_proxy to ${h.upstreams.join(", ") || "no upstream"}${
          h.transport ? ` over ${h.transport}` : ""
        }`;
      case "file_server":
        return `file_server from ${
          h.root === undefined ? "the working directory" : JSON.stringify(h.root)
        }`;
      case "redirect":
        return `a redirect (${h.status}) to ${h.to}`;
      case "respond":
        return `a fixed response (${h.status})`;
      case "other":
        return `handler ${JSON.stringify(h.handler)}`;
    }
  }).join(" and ");
}

function describeRendered(r: RenderedRoute): string {
  switch (r.kind) {
    case "reverse_proxy":
      return `reverse_proxy to ${r.upstream}`;
    case "file_server":
      return `file_server from ${JSON.stringify(r.root)}`;
    case "redirect":
      return `a redirect to ${r.to}`;
  }
}
