/** A progress line for the operator (vpctl writes them to stderr at once). */
export type Progress = (text: string) => void;

const EVERY_MS = 2000;

/** For long loops: `report` prints at most every 2 s, `last` always (the final count). */
export function throttled(progress: Progress): { report(text: string): void; last(text: string): void } {
  let at = Date.now();
  return {
    report: (text) => {
      if (Date.now() - at < EVERY_MS) return;
      at = Date.now();
      progress(text);
    },
    last: progress,
  };
}
