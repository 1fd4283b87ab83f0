// This process's child processes, read from /proc: what a pool of worker processes started and how much memory they hold.
import { readdirSync, readFileSync } from 'node:fs';

/** This process's children (the pools' worker processes). */
export function childPids(): string[] {
  return readdirSafe('/proc/self/task').flatMap((task) =>
    readSafe(`/proc/self/task/${task}/children`).split(' ').filter(Boolean),
  );
}

/** Resident bytes of this process's children. */
export function treeRss(): number {
  return childPids().reduce(
    (total, pid) => total + Number(readSafe(`/proc/${pid}/statm`).split(' ')[1] ?? 0) * 4096,
    0,
  );
}

export async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

function readdirSafe(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

function readSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
