// Which queue a free slot pulls next, and how long it waits: round-robin, preferring queues no
// other slot is polling; the full long-poll only while every queue can have an idle slot.
import type { StageHandler } from './types.js';

export interface Route {
  queue: string;
  handler: string;
  fn: StageHandler;
}

/** Long-poll wait (s) while there are more queues than idle slots. */
export const SHARED_WAIT_SECONDS = 2;

export class Rotation {
  /** Slots running a delivery. */
  busy = 0;
  private next = 0;
  private readonly polling = new Map<string, number>();

  constructor(
    readonly routes: readonly Route[],
    private readonly concurrency: number,
    private readonly waitSeconds: number,
  ) {
    if (routes.length === 0) throw new Error('a worker needs at least one queue');
  }

  /** Picks the next queue and its wait, and counts the pull as in flight until `done`. */
  take(): { route: Route; wait: number; done: () => void } {
    const route = this.pick();
    const idle = this.concurrency - this.busy;
    const wait =
      this.routes.length <= idle
        ? this.waitSeconds
        : Math.min(this.waitSeconds, SHARED_WAIT_SECONDS);
    this.polling.set(route.queue, (this.polling.get(route.queue) ?? 0) + 1);
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      this.polling.set(route.queue, (this.polling.get(route.queue) ?? 1) - 1);
    };
    return { route, wait, done };
  }

  /**
   * The queue a result's pull asks for (decision 0100), in the same round-robin order. That pull
   * never waits, so it is not counted as polling.
   */
  pickNext(): Route {
    return this.pick();
  }

  private pick(): Route {
    const n = this.routes.length;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      const route = this.routes[i] as Route;
      if ((this.polling.get(route.queue) ?? 0) === 0) {
        this.next = (i + 1) % n;
        return route;
      }
    }
    const route = this.routes[this.next] as Route;
    this.next = (this.next + 1) % n;
    return route;
  }
}
