// The example worker's handlers. Each one shows one part of the handler API.
import { setTimeout as wait } from 'node:timers/promises';
import { StageError } from '@po/worker-sdk';
import type { HandlerContext } from '@po/worker-sdk';

/** `echo`: returns its input unchanged. */
export function echo(ctx: HandlerContext): string {
  ctx.log(`echoing ${ctx.input.length} characters`);
  return ctx.input;
}

/**
 * `sleep`: input `{"ms": 5000}`; waits, and stops early when ctx.signal aborts. With
 * `"attempts": n` it only waits on attempts 1..n and returns at once after that (handy to show a
 * stage that hangs, loses its worker, and completes on the retry).
 */
export async function sleep(ctx: HandlerContext): Promise<{ slept: number }> {
  const { ms = 1000, attempts } = ctx.json<{ ms?: unknown; attempts?: unknown }>({});
  if (typeof attempts === 'number' && ctx.stage.attempt > attempts) return { slept: 0 };
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new StageError('VALIDATION_ERROR', 'input.ms must be a number >= 0', {
      retryable: false,
    });
  }
  // Rejects with ctx.signal.reason (lease lost, stage timeout, worker stopping) when it aborts.
  await wait(ms, undefined, { signal: ctx.signal });
  ctx.log(`slept ${ms} ms`);
  return { slept: ms };
}

/** `fail`: input `{"code": "PAYMENT_DECLINED", "message": "…", "retryable": false}`. */
export function fail(ctx: HandlerContext): never {
  const input = ctx.json<{ code?: unknown; message?: unknown; retryable?: unknown }>({});
  const code = typeof input.code === 'string' && input.code !== '' ? input.code : 'EXAMPLE_FAILURE';
  const message = typeof input.message === 'string' ? input.message : 'failed on purpose';
  const retryable = typeof input.retryable === 'boolean' ? input.retryable : undefined;
  throw new StageError(code, message, retryable === undefined ? {} : { retryable });
}

/**
 * `flaky`: input `{"failures": 2}`; attempts 1..failures fail with the retryable code FLAKY,
 * the next one succeeds. The stage needs retries (options.retryInterval and maxRetries > 0).
 */
export function flaky(ctx: HandlerContext): { attempt: number } {
  const { failures = 1 } = ctx.json<{ failures?: unknown }>({});
  if (typeof failures !== 'number' || !Number.isInteger(failures) || failures < 0) {
    throw new StageError('VALIDATION_ERROR', 'input.failures must be an integer >= 0', {
      retryable: false,
    });
  }
  const { attempt } = ctx.stage;
  if (attempt <= failures) {
    throw new StageError('FLAKY', `attempt ${attempt} fails on purpose (${failures} planned)`, {
      retryable: true,
    });
  }
  ctx.log(`succeeded on attempt ${attempt}`);
  return { attempt };
}

/** `approve`: parks the stage in WaitingForApproval with its input as the output. */
export function approve(ctx: HandlerContext) {
  ctx.log('waiting for approval (POST /stages/{stageId}/resume)');
  return ctx.awaitApproval(ctx.input === '' ? undefined : ctx.input);
}
