// Runs after a failed `tap`: prints every failed assertion from tap's saved results (.tap/test-results), with the file,
// the chain of subtests above it and the start of its diagnostics, so the last lines of a CI log say what failed.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const resultsDir = '.tap/test-results';
const diagnosticLines = 24;

function resultFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return resultFiles(path);
    return entry.name.endsWith('.tap') ? [path] : [];
  });
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

function failuresIn(file: string): string[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const subtests: { indent: number; name: string }[] = [];
  const report: string[] = [];
  lines.forEach((line, index) => {
    const indent = indentOf(line);
    const trimmed = line.trim();
    const subtest = /^# Subtest: (.*)$/.exec(trimmed);
    if (subtest) {
      while (subtests.length > 0 && subtests[subtests.length - 1].indent >= indent) subtests.pop();
      subtests.push({ indent, name: subtest[1] });
      return;
    }
    // A subtest's own line (it carries its time) only sums up the failures inside it, printed already.
    if (!trimmed.startsWith('not ok ') || /# (TODO|SKIP|time=)/.test(trimmed)) return;
    const chain = subtests.filter((s) => s.indent < indent).map((s) => s.name);
    const diagnostics = [];
    for (let next = index + 1; next < lines.length && diagnostics.length < diagnosticLines; next++) {
      if (indentOf(lines[next]) <= indent && lines[next].trim() !== '') break;
      diagnostics.push(lines[next]);
    }
    report.push(`${[...chain, trimmed].join(' > ')}`, ...diagnostics);
  });
  return report;
}

let failed = 0;
console.log('\n# Failed assertions (from .tap/test-results)');
for (const file of resultFiles(resultsDir).sort()) {
  const report = failuresIn(file);
  if (report.length === 0) continue;
  failed++;
  console.log(`\n## ${relative(resultsDir, file)}`);
  console.log(report.join('\n'));
}
console.log(`\n# ${failed} test file(s) with failures`);
