/**
 * What each resource type is about on the machine, one line per type: the field that names its
 * subject, the space in which two resources (of one source or of two) name the same thing, the
 * word for it in messages, and whether applying it can create accounts or groups. Zod-free, so
 * the fast declaration read (lib/declaration_base.ts) and the apply (host/apply.ts) use it
 * without loading a schema. A new type is a line here too; tests/docs/resources_test.ts holds
 * its keys to the types, and the type check holds every `ResourceType` to have one.
 *
 * This module is the bottom layer with lib/: it imports nothing.
 *
 * @module
 */

/** What one resource type is about. */
export interface Subject {
  /** The field naming its subject (`path`, `unit`, ...; an action's is its `id`). */
  readonly field: string;
  /**
   * The space in which two resources name the same thing (a path by its real location); absent
   * for a subject that is its source's own (an action's id): it never collides.
   */
  readonly space?: "path" | "unit" | "package" | "container";
  /** The word for it in messages ("path", "container name"). */
  readonly what: string;
  /**
   * Applying it can create accounts or groups (an action's command, a package's postinst): they
   * are read again after it changed something.
   */
  readonly changesAccounts?: true;
}

/** Each resource type's subject. */
export const SUBJECTS = {
  directory: { field: "path", space: "path", what: "path" },
  file: { field: "path", space: "path", what: "path" },
  service: { field: "unit", space: "unit", what: "unit" },
  package: { field: "package", space: "package", what: "package", changesAccounts: true },
  container: { field: "name", space: "container", what: "container name" },
  action: { field: "id", what: "action", changesAccounts: true },
} as const satisfies Record<string, Subject>;

/** A resource type named in {@linkcode SUBJECTS}. */
export type SubjectType = keyof typeof SUBJECTS;

/** The subject of resource type `type`, or undefined when `type` names none (untrusted input). */
export function subjectOfType(type: unknown): Subject | undefined {
  return typeof type === "string" && Object.hasOwn(SUBJECTS, type)
    ? SUBJECTS[type as SubjectType]
    : undefined;
}

/** Whether resources of `type` are paths (files and directories). */
export function isPathType(type: SubjectType): boolean {
  return subjectOfType(type)?.space === "path";
}
