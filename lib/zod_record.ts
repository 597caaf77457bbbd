/**
 * zod's record that reads an own `__proto__` key as any other key: the one record of every
 * boundary schema whose input is JSON or YAML (a declaration's container `env`, the store's
 * `sources`, the registry's `services`, the runtime outputs' labels, reconcile's first-seen state
 * and Caddy's servers).
 *
 * @module
 */

import { z } from "zod";

/**
 * zod's record (`z.record`), but an own `__proto__` key (JSON.parse and the YAML loaders make one)
 * is read as any other key: its key checked (a key the key schema refuses is zod's `invalid_key`
 * issue at that key, as for any other key), its value checked, and kept in its place in the value,
 * as data (defined, not assigned, so it never sets the value's prototype). zod's own record skips
 * such a key unchecked (copying it onto the plain object it builds would set that object's
 * prototype), so a schema would accept what the generated validator (which checks it as any other
 * key) refuses, or return a value without it where the validator's reader keeps it: either way the
 * key would vanish without a word. Its JSON Schema is the record's: the generated validator is the
 * same. Built with zod's core API for schema types (`z.core.$constructor`, its `_zod.parse`); a
 * record whose key schema lists its keys (an enum) is zod's own, which never reads an unlisted key.
 * tests/lib/zod_record_test.ts holds it, each boundary's tests a `__proto__` key in its records.
 */
const OwnKeysRecord = z.core.$constructor(
  "OwnKeysRecord",
  (inst: z.ZodRecord, def: z.core.$ZodRecordDef) => {
    z.ZodRecord.init(inst, def);
    const parse = inst._zod.parse;
    inst._zod.parse = (payload, ctx) => {
      const input = payload.value as Record<string, unknown>;
      const result = parse(payload, ctx);
      if (def.keyType._zod.values) return result; // listed keys: an unlisted one is unrecognized
      if (!z.core.util.isPlainObject(input) || !Object.hasOwn(input, "__proto__")) return result;
      if (!Object.prototype.propertyIsEnumerable.call(input, "__proto__")) return result;
      if (result instanceof Promise) throw new z.core.$ZodAsyncError();
      const run = (schema: z.core.$ZodType, value: unknown) => {
        const out = schema._zod.run({ value, issues: [] }, ctx) as z.core.ParsePayload;
        if (out instanceof Promise) throw new z.core.$ZodAsyncError();
        return out;
      };
      const key = run(def.keyType, "__proto__");
      if (key.issues.length > 0) {
        // As zod says of any other key its key schema refuses.
        payload.issues.push({
          code: "invalid_key",
          origin: "record",
          issues: key.issues.map((i) => z.core.util.finalizeIssue(i, ctx, z.core.config())),
          input: "__proto__",
          path: ["__proto__"],
          inst,
        } as z.core.$ZodRawIssue);
        return payload;
      }
      const value = run(def.valueType, input.__proto__);
      payload.issues.push(...z.core.util.prefixIssues("__proto__", value.issues));
      const made = payload.value as Record<string, unknown>;
      const own = (into: object, name: PropertyKey) =>
        Object.defineProperty(into, name, {
          value: value.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      // A key schema that transforms: kept under its output, after the others (their output
      // names do not say where their input keys were).
      if (key.value !== "__proto__") {
        own(made, key.value as PropertyKey);
        return payload;
      }
      // Each key in the input's place, the own `__proto__` defined (not assigned) among them.
      const kept: Record<string, unknown> = {};
      for (const name of Object.keys(input)) {
        if (name === "__proto__") own(kept, name);
        else if (Object.hasOwn(made, name)) kept[name] = made[name];
      }
      payload.value = kept;
      return payload;
    };
  },
);

/**
 * `z.record(key, value)` that reads an own `__proto__` key as any other key
 * ({@linkcode OwnKeysRecord}): refused with zod's `invalid_key` issue at `["__proto__"]` when
 * `key` refuses the name, its value checked and kept (an own, enumerable property, in the input's
 * place) when `key` accepts it.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { record } from "./zod_record.ts";
 * import assert from "node:assert/strict";
 *
 * const env = record(z.string().regex(/^[A-Za-z_]\w*$/u), z.string());
 * const read = env.parse(JSON.parse('{"A":"1","__proto__":"x"}'));
 * assert.deepEqual(Object.keys(read), ["A", "__proto__"]);
 * assert.equal(Object.getPrototypeOf(read), Object.prototype);
 * assert(!env.safeParse(JSON.parse('{"__proto__":5}')).success);
 * ```
 */
export function record<K extends z.core.$ZodRecordKey, V extends z.ZodType>(
  key: K,
  value: V,
): z.ZodRecord<K, V> {
  return new OwnKeysRecord({ type: "record", keyType: key, valueType: value }) as z.ZodRecord<
    K,
    V
  >;
}
