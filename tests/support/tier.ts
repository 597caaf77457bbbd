/**
 * The tier a test runs in (docs/testing.md, "Tiers"): `deno task test:fast` sets
 * `MESH_TEST_TIER=fast` for its run, and a test that repeats its work many times (fuzz inputs,
 * kill points, mutations) takes a smaller count there; `deno task test`, the whole suite, runs
 * the full count.
 *
 * @module
 */

/** The variable `scripts/test_fast.ts` sets, and its value there. */
export const TIER_VARIABLE = "MESH_TEST_TIER";

/** True in `deno task test:fast`'s run (`MESH_TEST_TIER=fast`); false in the whole suite. */
export const FAST_TIER: boolean = Deno.env.get(TIER_VARIABLE) === "fast";

/**
 * `whole` in the whole suite, `fast` in the fast tier: how many times a test repeats its work.
 *
 * @example
 * ```ts ignore
 * const inputs = byTier({ whole: 2_000, fast: 200 });
 * ```
 */
export function byTier(counts: { whole: number; fast: number }): number {
  return FAST_TIER ? counts.fast : counts.whole;
}
