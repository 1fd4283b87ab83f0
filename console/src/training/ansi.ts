/** A run of text with the colour and weight its ANSI codes gave it. */
export interface Styled {
  text: string;
  color?: string;
  bold?: boolean;
}

const ESCAPE = String.fromCharCode(27);

/** The 16 terminal colours (30-37, 90-97), as the console's dark output panel shows them. */
const COLORS = ['#6e7781', '#ff7b72', '#7ee787', '#e3b341', '#79c0ff', '#d2a8ff', '#56d4dd', '#f0f6fc'];

/**
 * A console line split at its SGR escape codes (the trainer prints `\x1b[34m\x1b[1mtrain: \x1b[0m…`): colours 30-37
 * and 90-97, bold 1, resets 0, 22 and 39; any other escape sequence is dropped, never shown as text.
 */
export function parseAnsi(line: string): Styled[] {
  const runs: Styled[] = [];
  let color: string | undefined;
  let bold = false;
  const pattern = new RegExp(`${ESCAPE}\\[([0-9;]*)([A-Za-z])`, 'g');
  let last = 0;
  const push = (text: string) => {
    if (text) runs.push({ text, ...(color && { color }), ...(bold && { bold }) });
  };
  for (let match = pattern.exec(line); match; match = pattern.exec(line)) {
    push(line.slice(last, match.index));
    last = pattern.lastIndex;
    if (match[2] !== 'm') continue;
    for (const code of (match[1] || '0').split(';').map(Number)) {
      if (code === 0) [color, bold] = [undefined, false];
      else if (code === 1) bold = true;
      else if (code === 22) bold = false;
      else if (code === 39) color = undefined;
      else if (code >= 30 && code <= 37) color = COLORS[code - 30];
      else if (code >= 90 && code <= 97) color = COLORS[code - 90];
    }
  }
  push(line.slice(last));
  return runs;
}
