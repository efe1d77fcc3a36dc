// A's sentinel resources (fixtures.mjs): aimed at only by other applications, so any change to
// them during a run is a cross-tenant write. The running sentinel's lease is renewed all along.

/**
 * `api`/`wg` call the gateways; `lease` is the running sentinel's { stageId, executionId }.
 * Returns { snapshot(), verify(baseline) -> [{ what, before, after }], stop() }.
 */
export function watchSentinels({ api, wg, A, M, sentinelWorker, running, lease }) {
  const refused = [];
  const renewer = setInterval(() => {
    wg('POST', `/stages/${lease.stageId}/lease/renew`, {
      session: sentinelWorker.sessionToken,
      json: { executionId: lease.executionId, workerId: sentinelWorker.workerId },
    })
      .then((res) =>
        res.status === 200 && res.body?.acquired === true
          ? undefined
          : refused.push(`${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`),
      )
      .catch((err) => refused.push(String(err)));
  }, 20_000);
  renewer.unref();

  const snapshot = async () => {
    const pipelines = {};
    for (const s of A.pipelines.filter((x) => x.role === 'sentinel')) {
      const got = await api('GET', `/pipelines/${s.id}`, { key: A.apiKey });
      pipelines[s.id] = {
        status: got.body?.status,
        stageStatuses: got.body?.stageStatuses,
        stageCount: got.body?.stages?.length,
        context: (got.body?.pipelineContextItems ?? []).map((c) => `${c.key}=${c.value}`).sort(),
      };
    }
    const sched = await api('GET', `/schedules/${encodeURIComponent(`${M}-schedule-sentinel`)}`, {
      key: A.apiKey,
    });
    const workers = await api('GET', '/workers?limit=200', { key: A.apiKey });
    const worker = (workers.body?.items ?? []).find((x) => x.workerId === sentinelWorker.workerId);
    return {
      pipelines,
      schedule: {
        status: sched.body?.status,
        definitionVersion: sched.body?.definitionVersion,
        updatedAt: sched.body?.updatedAt,
      },
      worker: worker?.status,
    };
  };

  return {
    snapshot,
    stop() {
      clearInterval(renewer);
    },
    async verify(baseline) {
      const now = await snapshot();
      const out = [];
      const diff = (what, before, after) => {
        if (JSON.stringify(before) !== JSON.stringify(after)) out.push({ what, before, after });
      };
      for (const id of Object.keys(baseline.pipelines)) {
        // A lapsed lease (renewals refused or late under load) changes the running sentinel by itself.
        const note =
          Number(id) === running.id && refused.length
            ? ` (its lease renewals were refused: ${refused[0]})`
            : '';
        diff(`A's sentinel pipeline ${id}${note}`, baseline.pipelines[id], now.pipelines[id]);
      }
      diff("A's sentinel schedule", baseline.schedule, now.schedule);
      diff("A's sentinel worker status", baseline.worker, now.worker);
      // Still A's: B's bootstraps with A's instance ids must not have superseded it.
      const hb = await wg('POST', '/workers/heartbeat', {
        session: sentinelWorker.sessionToken,
        json: { workerId: sentinelWorker.workerId },
      });
      if (hb.status !== 200)
        out.push({ what: "A's sentinel worker session", before: 200, after: hb.status });
      return out;
    },
  };
}
