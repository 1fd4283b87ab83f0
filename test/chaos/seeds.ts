// The chaos runs CI makes: a fixed seed for a bounded number of rounds, and every seed that once broke an invariant,
// kept as a regression case with what it found (replayed for as many rounds as it took to find it).
export interface ChaosCase {
  seed: number;
  rounds: number;
  /** A regression case: the bug this seed found (fixed since). */
  found?: string;
}

export const CI_CASES: ChaosCase[] = [{ seed: 20261128, rounds: 8 }];
