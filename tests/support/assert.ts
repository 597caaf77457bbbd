/**
 * The assertions the suite uses, from Node's `assert` (JSR's @std/assert is not reachable
 * from these machines).
 *
 * @module
 */

import nodeAssert from "node:assert/strict";

/** Asserts `value` is truthy. */
export function assert(value: unknown, message?: string): asserts value {
  nodeAssert.ok(value, message);
}

/** Asserts deep equality. */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  nodeAssert.deepStrictEqual(actual, expected, message);
}

/** Asserts `actual` includes `expected`. */
export function assertStringIncludes(actual: string, expected: string, message?: string): void {
  nodeAssert.ok(
    actual.includes(expected),
    message ?? `Expected to find ${JSON.stringify(expected)} in:\n${actual}`,
  );
}

/** Asserts `fn` throws an instance of `type` and returns it. */
export function assertThrows<E extends Error>(
  fn: () => unknown,
  type: new (...args: never[]) => E,
): E {
  try {
    fn();
  } catch (error) {
    nodeAssert.ok(error instanceof type, `Expected ${type.name}, got ${String(error)}`);
    return error;
  }
  throw new nodeAssert.AssertionError({ message: `Expected ${type.name} to be thrown` });
}

/** Asserts `fn` rejects with an instance of `type` and returns it. */
export async function assertRejects<E extends Error>(
  fn: () => Promise<unknown>,
  type: new (...args: never[]) => E,
): Promise<E> {
  try {
    await fn();
  } catch (error) {
    nodeAssert.ok(error instanceof type, `Expected ${type.name}, got ${String(error)}`);
    return error;
  }
  throw new nodeAssert.AssertionError({ message: `Expected ${type.name} to be rejected` });
}

/** Asserts that `actual` matches `expected`. */
export function assertMatch(actual: string, expected: RegExp, message?: string): void {
  nodeAssert.match(actual, expected, message);
}
