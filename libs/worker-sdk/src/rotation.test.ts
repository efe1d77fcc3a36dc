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

  it('with one queue every idle slot long-polls it', () => {
    const r = new Rotation(routes('a'), 4, 20);
    expect([r.take().wait, r.take().wait, r.take().wait, r.take().wait]).toEqual([20, 20, 20, 20]);
  });

  it('with several queues, the full wait only while a slot is left over; otherwise the shared wait', () => {
    // Two queues, two idle slots: no slot is left over to cover a queue whose poller takes a delivery.
    expect(new Rotation(routes('a', 'b'), 2, 20).take().wait).toBe(SHARED_WAIT_SECONDS);
    const r = new Rotation(routes('a', 'b'), 3, 20);
    expect(r.take().wait).toBe(20);
    r.busy = 1; // two queues, two idle slots
    expect(r.take().wait).toBe(SHARED_WAIT_SECONDS);
    expect(new Rotation(routes('a', 'b', 'c'), 2, 20).take().wait).toBe(SHARED_WAIT_SECONDS);
    expect(new Rotation(routes('a', 'b', 'c'), 2, 1).take().wait).toBe(1);
  });

  it('six queues and eight slots (the conformance worker): every queue is polled, and a queue left by its poller is covered within the shared wait', () => {
    const r = new Rotation(routes('q1', 'q2', 'q3', 'q4', 'q5', 'q6'), 8, 20);
    const pulls = Array.from({ length: 8 }, () => r.take());
    expect(new Set(pulls.map((p) => p.route.queue)).size).toBe(6);
    // The two spares (second pollers of a queue) come back within the shared wait.
    expect(pulls.filter((p) => p.wait === SHARED_WAIT_SECONDS)).toHaveLength(2);
    // q1's only poller takes a delivery; a spare's pull ends and the slot goes to q1, the queue nobody polls.
    const q1 = pulls.find((p) => p.route.queue === 'q1')!;
    q1.done();
    r.busy = 1;
    const spare = pulls.find((p) => p.wait === SHARED_WAIT_SECONDS)!;
    spare.done();
    expect(r.take().route.queue).toBe('q1');
  });
});
