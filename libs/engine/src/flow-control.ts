import type { Queryable } from '@po/db';
import { admitStages, dispatchBucket, nextTokenAt, type Admission, type AdmissionCandidate, type HandlerGate, type StageStatus } from '@po/domain';
import type { Batch } from './batch.js';
import { lockPipelines, readPassStages, type PassStage } from './store.js';
import {
  activeStages,
  keyLoad,
  lockApplication,
  readHandlerSettings,
  settingsKey,
  throttledStages,
  writeTokens,
  type HandlerSettingsRow,
} from './store-slots.js';

/** Throttled stages read per key (and of the stages without one) when a batch looks outside itself. */
const OUTSIDE_PER_KEY = 16;
const OUTSIDE_TOTAL = 256;

type Ready = Map<number, { id: number; status: StageStatus }[]>;

/**
 * Flow control for one engine batch (decision 0132): for each application with a gate in play
 * (APP_MAX_ACTIVE_STAGES, a concurrency key, a handler's pause or rate), under the application's
 * advisory lock, admits the ready stages of the batch and the application's Throttled stages
 * elsewhere (whose pipelines it locks and adds to the batch) in priority and fair order.
 * Applications without any gate are absent from the answer: all their ready stages go. Resolves
 * with the candidates as they stand at the end (read again only when pipelines were added), for
 * the plan to use without working them out once more.
 */
export async function admitBatch(
  tx: Queryable,
  batch: Batch,
  ready: () => Ready,
  cap: number,
): Promise<{ admitted: Map<number, Admission>; candidates: Ready }> {
  const first = ready();
  let current = first;
  const apps = [...new Set([...first.keys(), ...batch.freeingApplications()])].sort((a, b) => a - b);
  const handlersOf = (app: number) => [
    ...new Set([...(first.get(app) ?? []).map((c) => batch.stageById.get(c.id)!.handlerName), ...batch.freedStages(app).map((s) => s.handlerName)]),
  ];
  // Which handlers have settings: read only for applications that have any (the lock said so).
  const withSettings = new Set([...batch.pipelines.values()].filter((p) => p.handlerSettings).map((p) => p.applicationId));
  const seen = await readHandlerSettings(
    tx,
    apps.filter((app) => withSettings.has(app)).flatMap((app) => handlersOf(app).map((handler) => ({ applicationId: app, handler }))),
  );
  const out = new Map<number, Admission>();
  const buckets: { applicationId: number; handler: string; tokens: number; at: Date }[] = [];
  for (const app of apps) {
    const own = first.get(app) ?? [];
    const freed = batch.freedStages(app);
    const keyed = (s: PassStage) => s.options.concurrencyKey != null;
    // A Throttled stage of the batch (a resumed handler's, a sweep's) says others may wait too.
    const gated =
      cap > 0 ||
      own.some((c) => c.status === 'Throttled' || keyed(batch.stageById.get(c.id)!)) ||
      freed.some(keyed) ||
      handlersOf(app).some((h) => gatesAtDispatch(seen.get(settingsKey(app, h))));
    if (!gated) continue;
    await lockApplication(tx, app);
    const candidatesOf = (list: readonly { id: number; status: StageStatus }[]) => list.map((c) => toCandidate(batch.stageById.get(c.id)!, c.status));

    // A batch that frees nothing here (a creation, an appended stage) looks elsewhere only when its
    // own stages find room: without room nobody is admitted, and room that was free already went
    // to the Throttled stages when it freed (or goes with the wake-up a rate refill, a resumed
    // handler or a raised limit sends). In a flood that skips the fair-order read per creation.
    let gates = freed.length === 0 ? await readGates(tx, batch, app, candidatesOf(own), freed, cap, withSettings.has(app)) : null;
    const ownRoom = gates !== null && admitStages(candidatesOf(own), gates.gates).dispatch.length > 0;
    // The application's Throttled stages elsewhere that could take the room this batch has. A
    // stage freed here releases one unit of each of its gates (the cap, its handler's limit, its
    // key's limit), and a stage waiting elsewhere can go now only through such a unit, so no key
    // can have more than three per freed stage admitted: reading more of each is wasted.
    const perKey = freed.length > 0 ? Math.min(OUTSIDE_PER_KEY, 3 * freed.length) : OUTSIDE_PER_KEY;
    const outside =
      gates === null || ownRoom ? (await throttledStages(tx, app, perKey, OUTSIDE_TOTAL)).filter((t) => !batch.pipelines.has(t.pipelineId)) : [];
    const everyone = [...candidatesOf(own), ...outside.map((t) => ({ ...t, status: 'Throttled' as const }))];
    if (gates === null || outside.length > 0) gates = await readGates(tx, batch, app, everyone, freed, cap, withSettings.has(app));

    const trial = admitStages(everyone, gates.gates);
    const outsideWon = new Set(trial.dispatch);
    const wanted = [...new Set(outside.filter((t) => outsideWon.has(t.id)).map((t) => t.pipelineId))].sort((a, b) => a - b);
    let owed = 0;
    if (wanted.length > 0) {
      // Never waited for: that would invert the lock order. A slot owed to a pipeline another
      // transaction holds stays free for it (§7).
      const { pipelines } = await lockPipelines(tx, wanted, true);
      batch.addPipelines(pipelines, await readPassStages(tx, pipelines.map((p) => p.id)));
      current = ready();
      const got = new Set(pipelines.map((p) => p.id));
      owed = outside.filter((t) => outsideWon.has(t.id) && !got.has(t.pipelineId)).length;
    }
    const final = admitStages(candidatesOf(current.get(app) ?? []), {
      ...gates.gates,
      appFree: gates.gates.appFree === null ? null : Math.max(0, gates.gates.appFree - owed),
    });
    out.set(app, final);

    for (const [handler, bucket] of gates.buckets) {
      const taken = final.tokensTaken.get(handler) ?? 0;
      if (taken > 0) buckets.push({ applicationId: app, handler, tokens: bucket.tokens - taken, at: new Date(bucket.at) });
      if (final.rateBlocked.has(handler)) {
        // One pass of one waiting pipeline when the next token is due; the sweep is the net.
        const rate = gates.settings.get(handler)!.maxPerSecond!;
        const admittedIds = new Set(final.dispatch);
        const waiting = (current.get(app) ?? []).find((c) => !admittedIds.has(c.id) && batch.stageById.get(c.id)!.handlerName === handler);
        if (waiting) {
          const after = { tokens: bucket.tokens - taken, at: bucket.at };
          batch.wakeAt.set(batch.stageById.get(waiting.id)!.pipelineId, new Date(nextTokenAt(rate, after)));
        }
      }
    }
  }
  await writeTokens(tx, buckets);
  return { admitted: out, candidates: current };
}

/** Whether a handler's settings hold its stages at dispatch: a pause or a rate (maxConcurrent is the queue's). */
const gatesAtDispatch = (row: HandlerSettingsRow | undefined): boolean => row !== undefined && (row.paused || row.maxPerSecond !== null);

function toCandidate(stage: PassStage, status: StageStatus): AdmissionCandidate {
  const key = stage.options.concurrencyKey ?? null;
  return { id: stage.id, status, handler: stage.handlerName, key, keyLimit: key === null ? null : (stage.options.concurrencyLimit ?? 1), priority: stage.options.priority ?? 3 };
}

/** The gates of one application, read under its lock; the stages this batch freed count as free. */
async function readGates(tx: Queryable, batch: Batch, app: number, candidates: readonly AdmissionCandidate[], freed: readonly PassStage[], cap: number, hasSettings: boolean) {
  const handlers = hasSettings ? [...new Set(candidates.map((c) => c.handler))] : [];
  // Read again under the application's lock: the rate buckets must be the latest.
  const settingsRows = await readHandlerSettings(tx, handlers.map((handler) => ({ applicationId: app, handler })));
  const settings = new Map<string, HandlerSettingsRow>([...settingsRows.values()].map((r) => [r.handler, r]));
  const keys = [...new Set(candidates.flatMap((c) => (c.key === null ? [] : [c.key])))];
  const [keysNow, active] = [await keyLoad(tx, app, keys), cap > 0 ? await activeStages(tx, app) : 0];
  for (const s of freed) {
    const key = s.options.concurrencyKey;
    if (key != null && keysNow.has(key)) keysNow.set(key, Math.max(0, keysNow.get(key)! - 1));
  }
  const nowMs = batch.now.getTime();
  const buckets = new Map<string, { tokens: number; at: number }>();
  const gates = new Map<string, HandlerGate>();
  for (const s of settings.values()) {
    let tokens: number | null = null;
    if (s.maxPerSecond !== null) {
      const bucket = dispatchBucket(s.maxPerSecond, s.tokensAt ? { tokens: s.tokens, at: s.tokensAt.getTime() } : null, nowMs);
      buckets.set(s.handler, bucket);
      tokens = bucket.tokens;
    }
    // maxConcurrent is held where deliveries are taken, not here: it is the number of places of the
    // handler's StageNext queue (decision 0132), so its stages go Pending and wait in the queue in
    // priority and turn order, and each ack takes the next one with it.
    gates.set(s.handler, { paused: s.paused, free: null, tokens });
  }
  return {
    settings,
    buckets,
    gates: {
      appFree: cap > 0 ? Math.min(cap, Math.max(0, cap - active) + freed.length) : null,
      handlers: gates,
      keyLoad: keysNow,
    },
  };
}
