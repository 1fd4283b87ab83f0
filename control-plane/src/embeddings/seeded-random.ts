/** mulberry32: small, fast, and the same sequence for the same seed (layouts, and the benchmark's generated vectors). */
export function seeded(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
