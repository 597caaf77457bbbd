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

/**
 * Whether `path` names a key that its parent, an object in the raw parsed `data`, does not have:
 * a required field left out, as opposed to one given a wrong value.
 */
export function absentAt(data: unknown, path: readonly (string | number)[]): boolean {
  const key = path.at(-1);
  if (key === undefined) return false;
  let parent: unknown = data;
  for (const step of path.slice(0, -1)) {
    if (typeof parent !== "object" || parent === null) return false;
    parent = Reflect.get(parent, step);
  }
  return typeof parent === "object" && parent !== null && !Array.isArray(parent) &&
    !Object.hasOwn(parent, key);
}

/**
 * The message for a schema's issue at `path` of the raw `data`: `Missing required field "x"` when
 * the field is not there, whatever words its schema gives a wrong value (an octal mode, a version,
 * an enum's options); else the issue's own message. A `custom` issue (a refinement) keeps its own.
 */
export function issueMessage(
  issue: { code: string; message: string },
  data: unknown,
  path: readonly (string | number)[],
): string {
  return issue.code !== "custom" && absentAt(data, path)
    ? `Missing required field "${String(path.at(-1))}"`
    : issue.message;
}
