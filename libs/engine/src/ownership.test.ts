// Issue 28: libs/engine is the only writer of stage and execution state. This reads every source file
// of the product (tests and generated code aside) and fails on a write to `stages` or
// `stage_executions` anywhere else, in SQL or through Prisma. Retention's deletes of finished
// history are not state changes and are not matched.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');

const WRITES = [
  /\bUPDATE\s+stages\b/i,
  /\bINSERT\s+INTO\s+stages\b/i,
  /\bUPDATE\s+stage_executions\b/i,
  /\bINSERT\s+INTO\s+stage_executions\b/i,
  /\.stage\.(update|updateMany|create|createMany|upsert)\(/,
  /\.stageExecution\.(update|updateMany|create|createMany|upsert)\(/,
];

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'generated' || name === 'testing') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|mts|mjs)$/.test(name) && !/\.test(-support)?\.ts$/.test(name)) out.push(path);
  }
  return out;
}

describe('one owner of stage state', () => {
  it('no code outside libs/engine writes the stages or stage_executions tables', () => {
    const roots = ['libs', 'services'].flatMap((top) => readdirSync(join(ROOT, top)).map((pkg) => join(ROOT, top, pkg, 'src')));
    const offenders: string[] = [];
    for (const root of roots) {
      if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) continue;
      for (const file of sources(root)) {
        const rel = relative(ROOT, file);
        if (rel.startsWith('libs/engine/')) continue;
        const text = readFileSync(file, 'utf8');
        for (const pattern of WRITES) if (pattern.test(text)) offenders.push(`${rel}: ${pattern}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('finds a write where there is one (the check can fail)', () => {
    const engineFiles = sources(join(ROOT, 'libs/engine/src')).map((f) => readFileSync(f, 'utf8'));
    for (const pattern of [WRITES[0]!, WRITES[3]!]) expect(engineFiles.some((t) => pattern.test(t))).toBe(true);
  });
});
