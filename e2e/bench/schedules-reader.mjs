// The schedules bench's visibility reader: a child process with its own PostgreSQL connection that
// polls `pipelines` in a tight loop (every BENCH_READER_POLL_MS, default 2 ms, from the start of
// one poll to the start of the next) and records when each pipeline was first seen, i.e. when its
// creating transaction had committed for a reader, not when it was stamped (created_at).
//
// Pipeline ids come from a sequence, so a lower id can commit after a higher one: "id > max seen"
// alone would lose it. Each poll asks for the ids above the highest seen and for every id below it
// not seen yet (the gaps); a gap that stays empty for BENCH_READER_GAP_SECONDS (120) is dropped (a
// rolled-back insert never fills its id) and counted.
//
// A pipeline first seen in a poll became visible between the start of the previous poll (whose
// snapshot did not have it) and the answer of this one; seenAt is that answer (an upper bound),
// and the width of the interval is reported as the reader's resolution.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const CHILD_FLAG = '--po-bench-visibility-reader';

/**
 * Forks the reader on database `url`; resolves once it has connected and polled once, with
 * { pid, backendPid, count(), stop(), kill() }. stop() resolves with { seen: Map(id → { scheduleId,
 * createdAtMs, seenAtMs }), polls: { n, periodMs[], rttMs[], windowMs[] }, gapsDropped, gapsLeft }.
 */
export async function startVisibilityReader(url, { pollMs = 2, gapSeconds = 120 } = {}) {
  const child = fork(fileURLToPath(import.meta.url), [CHILD_FLAG], {
    env: {
      ...process.env,
      PO_BENCH_READER_URL: url,
      PO_BENCH_READER_POLL_MS: String(pollMs),
      PO_BENCH_READER_GAP_SECONDS: String(gapSeconds),
    },
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const killChild = () =>
    child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');
  process.on('exit', killChild);
  const waiting = new Map(); // message type → resolve
  let exited = null;
  child.on('message', (m) => {
    const resolve = waiting.get(m.type);
    waiting.delete(m.type);
    resolve?.(m);
  });
  child.once('exit', (code, signal) => {
    exited = `the visibility reader exited (${signal ?? `code ${code}`})`;
    for (const resolve of waiting.values()) resolve({ error: exited });
    waiting.clear();
  });
  const ask = (type, reply = type) =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(exited));
      waiting.set(reply, (m) => (m.error ? reject(new Error(m.error)) : resolve(m)));
      if (type !== 'ready') child.send({ type });
    });
  const ready = await ask('ready');
  return {
    pid: child.pid,
    backendPid: ready.backendPid,
    /** Ends the reader at once (after a failure), without its figures. */
    kill() {
      process.off('exit', killChild);
      killChild();
    },
    /** Pipelines seen so far. */
    async count() {
      return (await ask('count')).count;
    },
    async stop() {
      const m = await ask('stop', 'result');
      process.off('exit', killChild);
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      const seen = new Map();
      for (let i = 0; i < m.seen.length; i += 4)
        seen.set(m.seen[i], {
          scheduleId: m.seen[i + 1],
          createdAtMs: m.seen[i + 2],
          seenAtMs: m.seen[i + 3],
        });
      return { seen, polls: m.polls, gapsDropped: m.gapsDropped, gapsLeft: m.gapsLeft };
    },
  };
}

async function readerMain() {
  const pollMs = Number(process.env.PO_BENCH_READER_POLL_MS);
  const gapMs = Number(process.env.PO_BENCH_READER_GAP_SECONDS) * 1000;
  const client = new pg.Client({
    connectionString: process.env.PO_BENCH_READER_URL,
    application_name: 'po-bench-reader',
  });
  await client.connect();
  const backendPid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  // The bench's tables are young and (autovacuum off on the bench box) never analysed: without
  // this, the prepared statement's generic plan can scan the whole table on every poll.
  await client.query('SET enable_seqscan = off');
  // Two index probes on the primary key: above the highest id seen, and the ids still missing below it.
  const text = `/* po-bench-reader */
    SELECT id::float8, coalesce(schedule_id, 0)::float8, round(extract(epoch FROM created_at) * 1000)::float8
    FROM pipelines WHERE id > $1
    UNION ALL
    SELECT id::float8, coalesce(schedule_id, 0)::float8, round(extract(epoch FROM created_at) * 1000)::float8
    FROM pipelines WHERE id = ANY($2::bigint[])`;
  const seen = []; // flat: id, scheduleId, createdAtMs, seenAtMs
  const seenIds = new Set();
  const gaps = new Map(); // id → when it became a gap (ms)
  let maxId = 0;
  let gapsDropped = 0;
  const polls = { n: 0, periodMs: [], rttMs: [], windowMs: [] };
  let prevSent = null;
  let stopping = false;

  const poll = async () => {
    const sent = Date.now();
    const { rows } = await client.query({
      name: 'po-bench-visibility',
      text,
      values: [maxId, [...gaps.keys()]],
      rowMode: 'array',
    });
    const answered = Date.now();
    polls.n += 1;
    polls.rttMs.push(answered - sent);
    if (prevSent !== null) polls.periodMs.push(sent - prevSent);
    let found = 0;
    for (const [id, scheduleId, createdAtMs] of rows) {
      if (seenIds.has(id)) continue;
      seenIds.add(id);
      gaps.delete(id);
      seen.push(id, scheduleId, createdAtMs, answered);
      found += 1;
    }
    if (found > 0 && prevSent !== null) polls.windowMs.push(answered - prevSent);
    let top = maxId;
    for (const [id] of rows) if (id > top) top = id;
    for (let id = maxId + 1; id < top; id++) if (!seenIds.has(id)) gaps.set(id, answered);
    maxId = top;
    for (const [id, since] of gaps)
      if (answered - since > gapMs) {
        gaps.delete(id);
        gapsDropped += 1;
      }
    prevSent = sent;
    return sent;
  };

  process.on('message', (m) => {
    if (m.type === 'count') process.send({ type: 'count', count: seenIds.size });
    if (m.type === 'stop') stopping = true;
  });
  process.on('disconnect', () => process.exit(0)); // the bench died
  await poll();
  process.send({ type: 'ready', backendPid });
  while (!stopping) {
    const sent = await poll();
    const wait = pollMs - (Date.now() - sent);
    // setTimeout(0) still yields to the IPC messages.
    await sleep(Math.max(0, wait));
  }
  await poll(); // one last look after the bench decided to stop
  await client.end();
  process.send({ type: 'result', seen, polls, gapsDropped, gapsLeft: gaps.size }, () =>
    process.disconnect(),
  );
}

if (process.argv.includes(CHILD_FLAG)) await readerMain();
