// `po handlers` against a stand-in client: what each command asks the API, and what it prints.
import type { HandlerSettingsRequest, HandlerView, PoClient } from '@po/client';
import { describe, expect, it } from 'vitest';
import { reportError } from '../errors.js';
import { buildProgram } from '../program.js';
import { waited } from '../render.js';

const view = (over: Partial<HandlerView> = {}): HandlerView => ({
  name: 'payments',
  paused: false,
  maxConcurrent: null,
  maxPerSecond: null,
  configured: true,
  backlog: 0,
  throttled: 0,
  pending: 0,
  running: 0,
  oldestWaitingSeconds: null,
  updatedAt: '2026-11-28T10:00:00.000Z',
  ...over,
});

async function po(args: string[], items: HandlerView[] = []) {
  const out: string[] = [];
  const err: string[] = [];
  const updates: [string, HandlerSettingsRequest][] = [];
  const io = { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
  const find = (name: string) => items.find((h) => h.name === name) ?? view({ name });
  const update = async (name: string, settings: HandlerSettingsRequest) => {
    updates.push([name, settings]);
    return { ...find(name), ...settings };
  };
  const handlers = {
    list: async () => items,
    get: async (name: string) => find(name),
    update,
    pause: (name: string) => update(name, { paused: true }),
    resume: (name: string) => update(name, { paused: false }),
  };
  let code = 0;
  const program = buildProgram(
    { io, makeClient: () => ({ handlers }) as unknown as PoClient },
    (c) => (code = c),
  );
  try {
    await program.parseAsync(['node', 'po', '--api-key', 'pos_k', ...args]);
  } catch (e) {
    code = reportError(e, io, 'table');
  }
  return { code, out: out.join('\n'), err: err.join('\n'), updates };
}

describe('po handlers', () => {
  it('list: a table with paused, running, backlog, throttled, oldest wait and limits', async () => {
    const { out } = await po(
      ['handlers', 'list'],
      [
        view({
          name: 'mail',
          paused: true,
          running: 2,
          backlog: 7,
          throttled: 5,
          pending: 2,
          oldestWaitingSeconds: 125.4,
          maxConcurrent: 2,
          maxPerSecond: 0.5,
        }),
        view({ name: 'resize', configured: false, updatedAt: null }),
      ],
    );
    expect(out.split('\n')).toEqual([
      'HANDLER  PAUSED  RUNNING  BACKLOG  THROTTLED  OLDEST WAIT  LIMITS',
      'mail     yes     2        7        5          2m05s        2 at once, 0.5/s',
      'resize   no      0        0        0          -            -',
    ]);
  });

  it('list: says so on stderr when there are none, and prints { items } as JSON', async () => {
    expect((await po(['handlers', 'list'])).err).toBe('no handlers');
    const json = await po(['-o', 'json', 'handlers', 'list'], [view()]);
    expect(JSON.parse(json.out)).toEqual({ items: [view()] });
  });

  it('show: the settings and what waits', async () => {
    const { out } = await po(
      ['handlers', 'show', 'mail'],
      [view({ name: 'mail', maxPerSecond: 5, backlog: 3, throttled: 1, pending: 2 })],
    );
    expect(out).toContain('max per second  5');
    expect(out).toContain('max concurrent  no limit');
    expect(out).toContain('backlog         3 (throttled 1, pending 2)');
  });

  it('pause and resume send paused only', async () => {
    const paused = await po(['handlers', 'pause', 'pay/eu']);
    expect(paused.updates).toEqual([['pay/eu', { paused: true }]]);
    expect(paused.out).toBe('handler pay/eu paused (backlog 0)');
    expect((await po(['handlers', 'resume', 'pay/eu'])).updates).toEqual([
      ['pay/eu', { paused: false }],
    ]);
  });

  it('limit: sets what is given, `none` clears, what is left out is not sent', async () => {
    const set = await po([
      'handlers',
      'limit',
      'mail',
      '--max-concurrent',
      '4',
      '--max-per-second',
      '2.5',
    ]);
    expect(set.updates).toEqual([['mail', { maxConcurrent: 4, maxPerSecond: 2.5 }]]);
    expect(set.out).toBe('handler mail: max concurrent 4, max per second 2.5');
    expect((await po(['handlers', 'limit', 'mail', '--max-per-second', 'none'])).updates).toEqual([
      ['mail', { maxPerSecond: null }],
    ]);
    expect((await po(['handlers', 'limit', 'mail', '--max-concurrent', 'none'])).updates).toEqual([
      ['mail', { maxConcurrent: null }],
    ]);
  });

  it('limit: bad values and no option at all are usage errors (exit 2), nothing sent', async () => {
    for (const args of [
      ['--max-concurrent', '0'],
      ['--max-concurrent', '1.5'],
      ['--max-per-second', '-1'],
      ['--max-per-second', 'fast'],
      [],
    ]) {
      const run = await po(['handlers', 'limit', 'mail', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.updates).toEqual([]);
    }
  });
});

describe('waited', () => {
  it('writes a wait in its two largest units', () => {
    expect([
      waited(null),
      waited(0.4),
      waited(59),
      waited(60),
      waited(3599),
      waited(3600 * 3 + 20 * 60),
      waited(86_400 * 2 + 3600 * 4),
    ]).toEqual([null, '0s', '59s', '1m00s', '59m59s', '3h20m', '2d04h']);
  });
});
