/**
 * Document paths in messages: `services.web.port[1]`, `resources[3].mode`.
 *
 * @module
 */

/** Formats a document path, quoting keys that are not plain words: `a.b[0]["x.y"]`. */
export function formatPath(path: readonly (string | number)[]): string {
  let out = "";
  for (const k of path) {
    if (typeof k === "number") out += `[${k}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(k)) out += out ? `.${k}` : k;
    else out += `[${JSON.stringify(k)}]`;
  }
  return out;
}
