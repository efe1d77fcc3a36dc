// `po pipelines watch`: poll a pipeline until it is terminal, telling each change as it is seen.
import { ConnectionError, ProblemError, type PipelineResponse, type PoClient } from '@po/client';
import { EXIT } from './errors.js';

export interface Change {
  /** `pipeline` for the pipeline's own status, else the stage. */
  what: 'pipeline' | 'stage';
  id: number;
  name: string;
  from: string | null;
  to: string;
}

/** What changed between two readings (`before` undefined: the first reading, everything is new). */
export function changes(before: PipelineResponse | undefined, after: PipelineResponse): Change[] {
  const out: Change[] = [];
  const old = new Map(before?.stages.map((s) => [s.id, s.status]) ?? []);
  for (const s of after.stages) {
    const from = old.get(s.id) ?? null;
    if (from !== s.status) out.push({ what: 'stage', id: s.id, name: s.name, from, to: s.status });
  }
  if (before?.status !== after.status) {
    out.push({
      what: 'pipeline',
      id: after.id,
      name: after.name,
      from: before?.status ?? null,
      to: after.status,
    });
  }
  return out;
}

export function describeChange(c: Change, at: Date): string {
  const clock = at.toISOString().slice(11, 19);
  const subject =
    c.what === 'pipeline' ? `pipeline ${c.id} (${c.name})` : `stage ${c.name} (${c.id})`;
  return `${clock}  ${subject}: ${c.from === null ? c.to : `${c.from} → ${c.to}`}`;
}

/** The exit code for how a watched pipeline ended. */
export function exitCodeFor(status: string): number {
  if (status === 'Completed') return EXIT.OK;
  if (status === 'Failed') return EXIT.FAILED;
  if (status === 'Cancelled') return EXIT.CANCELLED;
  return EXIT.ERROR;
}

export interface WatchOptions {
  intervalMs: number;
  /** Give up after this long (undefined: never). */
  timeoutMs?: number | undefined;
  onChange(change: Change, at: Date): void;
  /** A poll that failed and will be tried again. */
  onTransientError(err: Error): void;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** Failed polls in a row that are tolerated (the API restarting, say) before giving up. */
const MAX_FAILED_POLLS = 5;

function transient(err: unknown): err is Error {
  return err instanceof ConnectionError || (err instanceof ProblemError && err.status >= 500);
}

/** Polls until the pipeline is terminal; resolves with its last reading, or `timeout`. */
export async function watchPipeline(
  client: PoClient,
  pipelineId: number,
  options: WatchOptions,
): Promise<{ pipeline: PipelineResponse; timedOut: boolean }> {
  const now = options.now ?? (() => new Date());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline =
    options.timeoutMs === undefined ? undefined : now().getTime() + options.timeoutMs;
  let last: PipelineResponse | undefined;
  let failures = 0;
  for (;;) {
    try {
      const current = await client.pipelines.get(pipelineId);
      failures = 0;
      const at = now();
      for (const change of changes(last, current)) options.onChange(change, at);
      last = current;
      if (current.isTerminal) return { pipeline: current, timedOut: false };
    } catch (err) {
      if (!transient(err) || last === undefined || ++failures > MAX_FAILED_POLLS) throw err;
      options.onTransientError(err);
    }
    if (deadline !== undefined && last !== undefined && now().getTime() >= deadline)
      return { pipeline: last, timedOut: true };
    await sleep(options.intervalMs);
  }
}
