// Shared pieces of the schedules bench (schedules.mjs): creating schedules through the public API,
// the cost of the scheduler processes over a window, the lag figures of a set of ticks.
import { readFileSync, createReadStream } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { jitteredFireAt } from '@po/domain';
import { summarize } from './cluster.mjs';
import { cpuSeconds, rssMiB, startResourceMeter } from './resources.mjs';

export const SCHEDULER = 'scheduler-service';
export const seconds = (ms) => +(ms / 1000).toFixed(2);
const round = (v, digits = 2) => (v === null || v === undefined ? null : +v.toFixed(digits));

/** The definition of every bench schedule: one stage no worker serves, so its pipeline stays open. */
export const BENCH_DEFINITION = {
  name: 'bench-scheduled',
  stages: [{ stageName: 'only', stageHandlerName: 'bench-idle', input: 'x' }],
};

/** PUT /schedules/{name}; resolves with { status, ms, id, error } (id: the schedule's, 2xx only). */
export async function putSchedule(cluster, name, body, timeoutMs = 60_000) {
  const t0 = performance.now();
  try {
    const res = await fetch(`${cluster.apiUrl}/schedules/${encodeURIComponent(name)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-api-key': cluster.apiKey },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: res.status,
      ms: performance.now() - t0,
      id: ok ? Number(JSON.parse(text).id) : null,
      error: ok ? null : text.slice(0, 300),
    };
  } catch (err) {
    return { status: 0, ms: performance.now() - t0, id: null, error: String(err?.cause ?? err) };
  }
}

/**
 * `creators` concurrent loops that PUT `count` schedules (body(i) → { name, body }), closed loop,
 * until all are sent or `deadline` (epoch ms) passes. Resolves with the answers, in order
 * (undefined where the deadline stopped it), and { sent, non2xx, firstError, seconds, latencyMs }.
 */
export async function createSchedules(cluster, { count, creators, make, deadline = Infinity }) {
  const answers = new Array(count);
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: creators }, async () => {
      while (next < count && Date.now() < deadline) {
        const i = next++;
        const { name, body } = make(i);
        answers[i] = { name, body, ...(await putSchedule(cluster, name, body)) };
      }
    }),
  );
  const sent = answers.filter(Boolean);
  const failed = sent.filter((a) => a.id === null);
  return {
    answers,
    summary: {
      requested: count,
      sent: sent.length,
      created: sent.length - failed.length,
      non2xx: failed.length,
      firstError: failed[0] ? `${failed[0].status} ${failed[0].error}` : null,
      seconds: seconds(Date.now() - t0),
      latencyMs: summarize(sent.map((a) => a.ms)),
    },
  };
}

/** Busy CPU seconds of the whole machine so far (/proc/stat: all but idle and iowait), or null. */
function machineBusySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already inside user)
    return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / 100;
  } catch {
    return null;
  }
}

/** Peak resident memory of a process so far (VmHWM), MiB, or null. */
function hwmMiB(pid) {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? +(Number(m[1]) / 1024).toFixed(1) : null;
  } catch {
    return null;
  }
}

/**
 * What a window of the phase cost: CPU seconds of every service process, the visibility reader
 * (its node process and its PostgreSQL backend), the bench, PostgreSQL and Redis (resources.mjs);
 * for the scheduler processes also the RSS at the start, its peak sampled every 250 ms over the
 * window, at the end, and the process's own peak (VmHWM, since it started).
 */
export async function startWindowMeter({ cluster, reader, postmasterPid, redis }) {
  const processes = { ...cluster.pids, bench: process.pid, reader: reader.pid };
  const schedulers = Object.keys(cluster.pids).filter((n) => n.startsWith(SCHEDULER));
  const rss0 = Object.fromEntries(schedulers.map((n) => [n, rssMiB(cluster.pids[n])]));
  const peak = { ...rss0 };
  const sampler = setInterval(() => {
    for (const n of schedulers) {
      const v = rssMiB(cluster.pids[n]);
      if (v !== null && (peak[n] === null || v > peak[n])) peak[n] = v;
    }
  }, 250);
  const backend0 = cpuSeconds(reader.backendPid);
  const machine0 = machineBusySeconds();
  const meter = await startResourceMeter({ processes, postmasterPid, redis });
  const t0 = Date.now();
  return {
    async end() {
      clearInterval(sampler);
      const usage = await meter.end();
      const windowSeconds = (Date.now() - t0) / 1000;
      const backend1 = cpuSeconds(reader.backendPid);
      const machine1 = machineBusySeconds();
      const readerBackendCpuSeconds =
        backend0 === null || backend1 === null ? null : round(backend1 - backend0);
      const scheduler = {};
      for (const n of schedulers) {
        const u = usage.processes[n];
        scheduler[n] = {
          cpuSeconds: u.cpuSeconds,
          cpuPercentOfOneCore:
            u.cpuSeconds === null ? null : round((u.cpuSeconds / windowSeconds) * 100, 1),
          rssMiB: {
            start: rss0[n],
            peak: peak[n],
            end: u.rssMiB,
            processPeak: hwmMiB(cluster.pids[n]),
          },
        };
      }
      const others = {};
      for (const [n, u] of Object.entries(usage.processes))
        if (!schedulers.includes(n)) others[n] = { cpuSeconds: u.cpuSeconds, rssMiB: u.rssMiB };
      const schedulerCpu = schedulers.reduce((s, n) => s + (usage.processes[n].cpuSeconds ?? 0), 0);
      const accounted =
        Object.values(usage.processes).reduce((s, u) => s + (u.cpuSeconds ?? 0), 0) +
        (usage.postgresCpuSeconds ?? 0) +
        (usage.redisCpuSeconds ?? 0);
      const machine = machine0 === null || machine1 === null ? null : machine1 - machine0;
      return {
        windowSeconds: round(windowSeconds),
        scheduler,
        schedulerCpuSeconds: round(schedulerCpu),
        schedulerCpuPercentOfOneCore: round((schedulerCpu / windowSeconds) * 100, 1),
        postgresCpuSeconds: usage.postgresCpuSeconds,
        // Without the reader's own polling: what the services made PostgreSQL do.
        postgresCpuSecondsWithoutReader:
          usage.postgresCpuSeconds === null || readerBackendCpuSeconds === null
            ? null
            : round(usage.postgresCpuSeconds - readerBackendCpuSeconds),
        readerBackendCpuSeconds,
        redisCpuSeconds: usage.redisCpuSeconds,
        otherProcesses: others,
        // The whole machine's busy CPU over the window, and what none of the above used: other
        // work on the box (a shared machine) or the kernel on behalf of all.
        machineCpuSeconds: round(machine),
        machineCpuNotAccountedSeconds: machine === null ? null : round(machine - accounted),
      };
    },
  };
}

/**
 * Lines, warnings and errors (the logger writes level labels) of each scheduler process's log, the
 * first warning or error line (400 characters), and the five most frequent messages.
 */
export async function schedulerLogCounts(cluster) {
  const out = {};
  for (const [name, file] of Object.entries(cluster.logFiles ?? {})) {
    if (!name.startsWith(SCHEDULER)) continue;
    const counts = { lines: 0, warn: 0, error: 0, firstProblem: null };
    const messages = new Map();
    let rest = '';
    for await (const chunk of createReadStream(file, 'utf8')) {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        counts.lines += 1;
        const level = /"level":"(\w+)"/.exec(line)?.[1];
        if (level === 'warn') counts.warn += 1;
        if (level === 'error' || level === 'fatal') counts.error += 1;
        if ((level === 'warn' || level === 'error' || level === 'fatal') && !counts.firstProblem)
          counts.firstProblem = line.slice(0, 400);
        const msg = /"msg":"((?:[^"\\]|\\.){0,80})/.exec(line)?.[1] ?? '(none)';
        messages.set(msg, (messages.get(msg) ?? 0) + 1);
      }
    }
    const top = [...messages].sort((a, b) => b[1] - a[1]).slice(0, 5);
    out[name] = { ...counts, topMessages: Object.fromEntries(top) };
  }
  return out;
}

/** { n, p50, p90, p99, max } without the n, for compact breakdowns. */
export const compact = (values) => {
  const { n, p50, p99, max } = summarize(values);
  return { n, p50, p99, max };
};

/** The fire time (epoch ms) of a tick of a schedule: tick + its jitter offset (addendum §14.4). */
export const fireAtMs = (scheduleId, tick, jitterSeconds) =>
  jitteredFireAt(scheduleId, tick instanceof Date ? tick : new Date(tick), jitterSeconds).getTime();

/**
 * The reader's resolution: how long apart its polls started, how long one took, and the width of
 * the interval in which a pipeline it found became visible (previous poll's start → this answer).
 */
export function readerFigures(readerPollMs, result, { cpuSeconds: readerCpu } = {}) {
  return {
    pollEveryMs: readerPollMs,
    polls: result.polls.n,
    pollPeriodMs: summarize(result.polls.periodMs),
    pollRoundTripMs: summarize(result.polls.rttMs),
    visibilityWindowMs: summarize(result.polls.windowMs),
    gapsDropped: result.gapsDropped,
    gapsLeft: result.gapsLeft,
    ...(readerCpu === undefined ? {} : { cpuSeconds: readerCpu }),
  };
}
