// Queue rotation: coverage of every queue, and the wait of each pull.
import { describe, expect, it } from 'vitest';
import { Rotation, SHARED_WAIT_SECONDS } from './rotation.js';
import type { Route } from './rotation.js';

const routes = (...queues: string[]): Route[] =>
  queues.map((queue) => ({ queue, handler: queue, fn: () => undefined }));

describe('Rotation', () => {
  it('goes round-robin and skips queues another slot is polling', () => {
    const r = new Rotation(routes('a', 'b', 'c'), 3, 20);
    const first = r.take();
    const second = r.take();
    expect([first.route.queue, second.route.queue]).toEqual(['a', 'b']);
    first.done();
    expect(r.take().route.queue).toBe('c');
    expect(r.take().route.queue).toBe('a'); // the only queue nobody polls
  });

  it('long-polls fully only while every queue can have an idle slot', () => {
    const r = new Rotation(routes('a', 'b'), 2, 20);
    expect(r.take().wait).toBe(20);
    r.busy = 1; // one slot runs a job: two queues, one idle slot
    expect(r.take().wait).toBe(SHARED_WAIT_SECONDS);
    expect(new Rotation(routes('a', 'b', 'c'), 2, 20).take().wait).toBe(SHARED_WAIT_SECONDS);
    expect(new Rotation(routes('a', 'b', 'c'), 2, 1).take().wait).toBe(1);
  });
});
