// Runs `po` in-process against a stand-in client, for the command tests: what it printed on each
// stream and the exit code it set or an error mapped to. Not part of the package.
import type { PoClient } from '@po/client';
import { reportError } from './errors.js';
import { buildProgram } from './program.js';

export async function runPo(
  client: unknown,
  args: string[],
  now = new Date('2026-11-28T12:00:00.000Z'),
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
  let code = 0;
  const program = buildProgram(
    { io, makeClient: () => client as PoClient, now: () => now },
    (c) => (code = c),
  );
  try {
    await program.parseAsync(['node', 'po', '--api-key', 'pos_k', ...args]);
  } catch (e) {
    code = reportError(e, io, 'table');
  }
  return { code, out: out.join('\n'), err: err.join('\n') };
}
