/** A small deterministic PRNG (mulberry32): the same seed gives the same run, so a failing one can be replayed. */
export function seededRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (below: number) => Math.floor(next() * below);
  return {
    next,
    int,
    pick: <T>(items: readonly T[]): T => items[int(items.length)],
    bytes: (length: number): Buffer => {
      const bytes = Buffer.alloc(length);
      for (let i = 0; i < length; i += 1) bytes[i] = int(256);
      return bytes;
    },
  };
}

export type SeededRandom = ReturnType<typeof seededRandom>;
