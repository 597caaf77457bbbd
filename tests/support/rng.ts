/**
 * A small seeded generator (mulberry32) for the mutation tests, so that a failure names a seed
 * that replays it.
 *
 * @module
 */

/**
 * The generator of `seed`: `int(n)` a whole number in [0, n), `pick(items)` one of `items`,
 * `chance(p)` true with probability `p`.
 */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}

/** What {@linkcode rng} returns. */
export type Rng = ReturnType<typeof rng>;
