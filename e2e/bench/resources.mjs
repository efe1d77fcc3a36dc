// What the processes of a bench phase cost: CPU seconds (utime + stime from /proc/<pid>/stat)
// over the phase, resident memory (VmRSS from /proc/<pid>/status) at its end, and the CPU of the
// shared servers (PostgreSQL: the postmaster and all its backends; Redis: INFO cpu). Linux only:
// where /proc cannot be read the figures are null.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticksPerSecond;
function clockTicks() {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  return ticksPerSecond;
}

/** utime, stime, cutime, cstime (ticks) and ppid of a process, or null when it is gone. */
function procStat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state ppid … utime(14) stime(15) cutime(16) cstime(17), 1-based.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(f[1]),
      utime: Number(f[11]),
      stime: Number(f[12]),
      cutime: Number(f[13]),
      cstime: Number(f[14]),
    };
  } catch {
    return null;
  }
}

/** CPU seconds a process has used so far (itself, not its children), or null. */
export function cpuSeconds(pid) {
  const s = procStat(pid);
  return s ? (s.utime + s.stime) / clockTicks() : null;
}

/**
 * Read and write system calls a process has made so far (/proc/<pid>/io syscr, syscw), or null:
 * every socket message between the processes is at least one write, so this counts round trips.
 */
export function syscalls(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'utf8');
    const read = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const r = read('syscr');
    const w = read('syscw');
    return Number.isFinite(r) && Number.isFinite(w) ? { reads: r, writes: w } : null;
  } catch {
    return null;
  }
}

/** Resident set size in MiB, or null. */
export function rssMiB(pid) {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? +(Number(m[1]) / 1024).toFixed(1) : null;
  } catch {
    return null;
  }
}

/**
 * CPU seconds of the whole PostgreSQL server: the postmaster's own and its reaped children's
 * (cutime/cstime), plus every live child's. A backend that exits between two readings moves from
 * the second term to the first, so the difference of two readings is what the server used.
 */
export function postgresCpuSeconds(postmasterPid) {
  if (!postmasterPid) return null;
  const pm = procStat(postmasterPid);
  if (!pm) return null;
  let ticks = pm.utime + pm.stime + pm.cutime + pm.cstime;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = procStat(entry);
    if (s && s.ppid === postmasterPid) ticks += s.utime + s.stime;
  }
  return ticks / clockTicks();
}

/** The postmaster's pid: the parent of one of its backends (pg_backend_pid() of a connection). */
export function postmasterOf(backendPid) {
  return procStat(backendPid)?.ppid ?? null;
}

/** Commands Redis has processed so far (INFO stats total_commands_processed), or null. */
export async function redisCommands(redis) {
  try {
    const info = await redis.info('stats');
    const n = Number(/^total_commands_processed:(\d+)/m.exec(info)?.[1] ?? NaN);
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

/** Calls per command so far (INFO commandstats: scripts' inner calls included), or null. */
export async function redisCommandStats(redis) {
  try {
    const info = await redis.info('commandstats');
    const out = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
    return out;
  } catch {
    return null;
  }
}

/** What `redisCommandStats` counted between two readings, per unit, the largest first. */
export function commandStatsPerUnit(before, after, units, top = 12) {
  if (!before || !after || !units) return null;
  return Object.fromEntries(
    Object.entries(after)
      .map(([cmd, n]) => [cmd, (n - (before[cmd] ?? 0)) / units])
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([cmd, n]) => [cmd, +n.toFixed(2)]),
  );
}

/** Redis's own CPU seconds (INFO cpu: used_cpu_user + used_cpu_sys), or null. */
export async function redisCpuSeconds(redis) {
  try {
    const info = await redis.info('cpu');
    const read = (k) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
    const total = read('used_cpu_user') + read('used_cpu_sys');
    return Number.isFinite(total) ? total : null;
  } catch {
    return null;
  }
}

const round = (v, digits = 2) => (v === null || v === undefined ? null : +v.toFixed(digits));

/**
 * Samples named processes (name → pid) and the shared servers at the start of a phase; end()
 * samples again and returns { processes: { name: { cpuSeconds, writes, rssMiB } },
 * postgresCpuSeconds, redisCpuSeconds, redisCommands } (writes: write system calls). RSS is read at end() only: call it just before stopping anything.
 */
export async function startResourceMeter({ processes, postmasterPid, redis }) {
  // One Redis, or the primaries of a Redis Cluster (BENCH_REDIS=cluster): then also per primary.
  const nodes = Array.isArray(redis) ? redis : [redis];
  const sampleRedis = () =>
    Promise.all(nodes.map(async (r) => ({ cpu: await redisCpuSeconds(r), commands: await redisCommands(r) })));
  const cpu0 = Object.fromEntries(
    Object.entries(processes).map(([name, pid]) => [name, cpuSeconds(pid)]),
  );
  const io0 = Object.fromEntries(Object.entries(processes).map(([name, pid]) => [name, syscalls(pid)]));
  const pg0 = postgresCpuSeconds(postmasterPid);
  const redis0 = await sampleRedis();
  return {
    async end() {
      const out = {};
      for (const [name, pid] of Object.entries(processes)) {
        const now = cpuSeconds(pid);
        const io = syscalls(pid);
        out[name] = {
          cpuSeconds: now === null || cpu0[name] === null ? null : round(now - cpu0[name]),
          writes: io === null || io0[name] === null ? null : io.writes - io0[name].writes,
          rssMiB: rssMiB(pid),
        };
      }
      const pg1 = postgresCpuSeconds(postmasterPid);
      const redis1 = await sampleRedis();
      const perNode = redis1.map((after, i) => {
        const before = redis0[i];
        return {
          node: `${nodes[i].options.host}:${nodes[i].options.port}`,
          cpuSeconds: before.cpu === null || after.cpu === null ? null : round(after.cpu - before.cpu),
          commands: before.commands === null || after.commands === null ? null : after.commands - before.commands,
        };
      });
      const total = (key) => (perNode.some((n) => n[key] === null) ? null : perNode.reduce((s, n) => s + n[key], 0));
      return {
        processes: out,
        postgresCpuSeconds: pg0 === null || pg1 === null ? null : round(pg1 - pg0),
        redisCpuSeconds: total('cpuSeconds') === null ? null : round(total('cpuSeconds')),
        redisCommands: total('commands'),
        ...(nodes.length > 1 ? { redisPerNode: perNode } : {}),
      };
    },
  };
}
