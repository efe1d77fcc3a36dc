// Which queue a free slot pulls next, and how long it waits: round-robin, preferring queues no
// other slot is polling.
//
// With one queue every idle slot long-polls it. With several, a pull that gets a delivery leaves its
// queue unpolled, and only a pull that ends can cover it (a pull cannot be called back without
// risking a delivery the gateway already handed out). So the full long-poll goes only to a slot on
// a queue of its own while there is a slot more than there are queues; a spare on a queue another
// slot already polls (at most one per queue), and every slot while the idle ones do not outnumber
// the queues, waits SHARED_WAIT_SECONDS and comes back for a queue left unpolled. (The full wait
// whenever the idle slots merely matched the queues left such a queue unpolled for up to 20 s:
// the conformance kit's redelivery flake; the Go and Python SDKs have the same rule.)
import type { StageHandler } from './types.js';

export interface Route {
  queue: string;
  handler: string;
  fn: StageHandler;
}

/** Long-poll wait (s) of a pull that must come back soon to look at the other queues. */
export const SHARED_WAIT_SECONDS = 2;

export class Rotation {
  /** Slots running a delivery. */
  busy = 0;
  private next = 0;
  private readonly polling = new Map<string, number>();
  /** Pulls in flight on a queue another slot was already polling, at the shared wait. */
  private spares = 0;

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
    const n = this.routes.length;
    const idle = this.concurrency - this.busy;
    let wait = this.waitSeconds;
    let spare = false;
    if (n > 1 && wait > SHARED_WAIT_SECONDS) {
      if (n >= idle) wait = SHARED_WAIT_SECONDS;
      else if ((this.polling.get(route.queue) ?? 0) > 0 && this.spares < n) {
        wait = SHARED_WAIT_SECONDS;
        spare = true;
        this.spares += 1;
      }
    }
    this.polling.set(route.queue, (this.polling.get(route.queue) ?? 0) + 1);
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      this.polling.set(route.queue, (this.polling.get(route.queue) ?? 1) - 1);
      if (spare) this.spares -= 1;
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
