/**
 * What the proxy does for an address: the handlers that answer a request for a host, read from
 * the routes of one server in Caddy's JSON config (`GET /config/`, Caddy 2's
 * `apps.http.servers.<name>.routes`: each route has `match[]` (here only `host` matters),
 * `handle[]` and `terminal`; `subroute` handlers hold routes of their own).
 *
 * Handlers that only shape a request or response (`headers`, `encode`, `rewrite`, ... in
 * {@linkcode MIDDLEWARE}) are skipped; `vars` is read for `root`, which `file_server` uses. Every
 * other handler is an answer: `reverse_proxy` (with its upstreams), `file_server` (with its
 * root), `static_response` (a redirect when it sends `Location` with a 3xx status, else a
 * response), and any other handler by its name.
 *
 * @module
 */

/** A handler that answers requests for an address, as configured. */
export type ServedHandler =
  | {
    kind: "reverse_proxy";
    /** `upstreams[].dial`, e.g. `127.0.0.1:8080`. */
    upstreams: string[];
    /** `transport.protocol` when not plain HTTP (e.g. `fastcgi`). */
    transport?: string;
  }
  | { kind: "file_server"; root?: string }
  | { kind: "redirect"; to: string; status: number }
  | { kind: "respond"; status: number }
  | { kind: "other"; handler: string };

/** Handlers that shape requests or responses and do not answer by themselves. */
export const MIDDLEWARE: ReadonlySet<string> = new Set([
  "authentication",
  "encode",
  "headers",
  "intercept",
  "log_append",
  "map",
  "push",
  "request_body",
  "rewrite",
  "templates",
  "tracing",
]);

interface Route {
  match?: { host?: string[] }[];
  handle?: ({ handler: string; routes?: Route[] } & Record<string, unknown>)[];
  terminal?: boolean;
}

/**
 * The handlers that answer for `host` among `routes` (one server's), in order. A route applies
 * when it has no host matcher or its host matcher names `host` (lowercase); with `host` equal to
 * `*` (the catch-all), only routes without a host matcher apply. Stops after an applying
 * `terminal` route, as Caddy does.
 */
export function handlersFor(routes: unknown[] | undefined, host: string): ServedHandler[] {
  const out: ServedHandler[] = [];
  walk((routes ?? []) as Route[], host, { root: undefined }, out);
  return out;
}

function walk(
  routes: Route[],
  host: string,
  vars: { root: string | undefined },
  out: ServedHandler[],
): void {
  for (const route of routes) {
    const hosts = (route.match ?? []).flatMap((m) => m.host ?? []).map((h) => h.toLowerCase());
    if (hosts.length > 0 && (host === "*" || !hosts.includes(host))) continue;
    for (const h of route.handle ?? []) {
      if (h.handler === "subroute") walk(h.routes ?? [], host, vars, out);
      else if (h.handler === "vars") {
        if (typeof h.root === "string") vars.root = h.root;
      } else if (!MIDDLEWARE.has(h.handler)) out.push(handlerOf(h, vars));
    }
    if (route.terminal) return;
  }
}

function handlerOf(h: Record<string, unknown>, vars: { root: string | undefined }): ServedHandler {
  switch (h.handler) {
    case "reverse_proxy": {
      const upstreams = Array.isArray(h.upstreams)
        ? h.upstreams.map((u) => (u as { dial?: unknown })?.dial).filter((d) =>
          typeof d === "string"
        ) as string[]
        : [];
      const protocol = (h.transport as { protocol?: unknown } | undefined)?.protocol;
      return {
        kind: "reverse_proxy",
        upstreams,
        ...(typeof protocol === "string" && protocol !== "http" ? { transport: protocol } : {}),
      };
    }
    case "file_server": {
      const root = typeof h.root === "string" ? h.root : vars.root;
      return root === undefined ? { kind: "file_server" } : { kind: "file_server", root };
    }
    case "static_response": {
      // status_code is a number or a string (Caddy's WeakString); absent means 200.
      const status = h.status_code === undefined ? 200 : Number(h.status_code);
      const headers = (h.headers ?? {}) as Record<string, unknown>;
      const key = Object.keys(headers).find((k) => k.toLowerCase() === "location");
      const location = key !== undefined && Array.isArray(headers[key])
        ? (headers[key] as unknown[])[0]
        : undefined;
      if (typeof location === "string" && status >= 300 && status <= 399) {
        return { kind: "redirect", to: location, status };
      }
      return { kind: "respond", status: Number.isFinite(status) ? status : 0 };
    }
    default:
      return { kind: "other", handler: String(h.handler) };
  }
}
