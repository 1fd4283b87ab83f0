export interface JsonProblem {
  /** Keys from the checked value down to the offending node (array indexes as strings). */
  path: string[];
  message: string;
}

interface Node {
  value: unknown;
  key: string;
  parent: Node | undefined;
  depth: number;
}

/** Longest key, and most keys, shown in a path: a hostile key could be as long as the body, a path as deep. */
const MAX_SHOWN_KEY = 100;
const MAX_SHOWN_KEYS = 8;

/** Why one string cannot be stored as text: PostgreSQL refuses NUL, and a lone UTF-16 surrogate has no UTF-8 form. */
function textProblem(text: string): string | undefined {
  if (text.includes('\0')) return 'must not contain the NUL character (\\u0000)';
  if (!text.isWellFormed()) return 'is not valid Unicode: it contains a lone surrogate (such as \\ud800)';
  return undefined;
}

function pathOf(node: Node): string[] {
  const path: string[] = [];
  for (let at: Node | undefined = node; at?.parent; at = at.parent) {
    path.unshift(at.key.length > MAX_SHOWN_KEY ? `${at.key.slice(0, MAX_SHOWN_KEY)}…` : at.key);
  }
  return path.length > MAX_SHOWN_KEYS ? [...path.slice(0, MAX_SHOWN_KEYS), '…'] : path;
}

/**
 * The first reason a parsed JSON value cannot be stored, or undefined when every string and key is
 * storable text and objects and arrays nest at most maxDepth levels. Walks with an explicit stack, so a
 * hostile depth cannot overflow this check itself.
 */
export function storableJsonProblem(value: unknown, maxDepth: number): JsonProblem | undefined {
  const pending: Node[] = [{ value, key: '', parent: undefined, depth: 0 }];
  for (let node = pending.pop(); node; node = pending.pop()) {
    if (typeof node.value === 'string') {
      const problem = textProblem(node.value);
      if (problem) return { path: pathOf(node), message: problem };
      continue;
    }
    if (node.value === null || typeof node.value !== 'object') continue;
    if (node.depth >= maxDepth) return { path: pathOf(node), message: `nested deeper than ${maxDepth} levels` };
    for (const [key, child] of Object.entries(node.value)) {
      const problem = textProblem(key);
      if (problem) return { path: pathOf(node), message: `a key ${problem}` };
      pending.push({ value: child, key, parent: node, depth: node.depth + 1 });
    }
  }
  return undefined;
}
