import { Invalid } from '../http/errors.ts';

/** Class names match ignoring case, except names of 1-2 characters ("a" and "A" can be different classes). */
export const classKey = (name: string) => (name.length > 2 ? name.toLowerCase() : name);

export function checkClassNames(names: string[], field: string): void {
  const seen = new Map<string, number>();
  names.forEach((name, index) => {
    const first = seen.get(classKey(name));
    if (first !== undefined) {
      throw Invalid(
        `${field}[${index}]: "${name}" duplicates ${field}[${first}] "${names[first]}" (case is ignored beyond 2 characters)`,
      );
    }
    seen.set(classKey(name), index);
  });
}

// A fixed palette so a class keeps its colour across reads and replicas.
const PALETTE = [
  '#042aff',
  '#0bdbeb',
  '#f3f3f3',
  '#00dfb7',
  '#111f68',
  '#ff6fdd',
  '#ff444f',
  '#cced00',
  '#00f344',
  '#bd00ff',
  '#00b4ff',
  '#dd00ba',
  '#00ffff',
  '#26c000',
  '#01ffb3',
  '#7d24ff',
  '#7b0068',
  '#ff1b6c',
  '#fc6d2f',
  '#a2ff0b',
];

/** Class index (as a string) → colour: how the hosted service's client reads classColors. */
export function colorMap(colors: string[]): Record<string, string> {
  return Object.fromEntries(colors.map((color, index) => [String(index), color]));
}

/** Colours aligned with the class names: the stored one where set, else the palette's. */
export function classColors(names: string[], stored: string[]): string[] {
  return names.map((_, index) => stored[index] ?? PALETTE[index % PALETTE.length]);
}
