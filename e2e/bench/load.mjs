// How the engine bench offers pipelines: POST /pipelines/idempotent, by a few concurrent creators
// (closed loop: as fast as the API answers) or at a fixed rate (open loop: each request leaves at
// its planned instant whether or not earlier ones have been answered).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** The definition every bench pipeline uses: `stages` stages of handler `work`. */
export const stageDefinitions = (stages) =>
  Array.from({ length: stages }, (_, i) => ({
    stageName: `s${i}`,
    stageHandlerName: 'work',
    input: `x${i}`,
  }));

// node:http with kept-alive connections rather than the global fetch: the bench shares the two
// cores with what it measures, and fetch's WHATWG streams cost it several times more CPU per request.
const agent = new http.Agent({ keepAlive: true });

/** POST `body` (JSON text) to `url`; resolves with { status, text } once the whole answer is read. */
function postJson(url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * One idempotent creation; resolves with { status, ms, id } where ms runs from the request's
 * start to its full response read, and id is the pipeline's (null unless 2xx).
 */
export async function createPipeline(cluster, key, stages) {
  const t0 = performance.now();
  try {
    const { status, text } = await postJson(
      `${cluster.apiUrl}/pipelines/idempotent`,
      { 'x-api-key': cluster.apiKey },
      JSON.stringify({ idempotencyKey: key, name: key, stages }),
    );
    const ms = performance.now() - t0;
    const ok = status >= 200 && status < 300;
    return {
      status,
      ms,
      id: ok ? JSON.parse(text).pipeline.id : null,
      error: ok ? null : text.slice(0, 300),
    };
  } catch (err) {
    return { status: 0, ms: performance.now() - t0, id: null, error: String(err?.cause ?? err) };
  }
}

/** `creators` concurrent loops creating `count` pipelines; resolves with the answers in order. */
export async function createClosedLoop(cluster, { count, creators, stages, prefix }) {
  const definition = stageDefinitions(stages);
  const answers = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: creators }, async () => {
      while (next < count) {
        const i = next++;
        answers[i] = await createPipeline(cluster, `${prefix}-${i}`, definition);
      }
    }),
  );
  return answers;
}

/**
 * Creates pipelines at `perSecond` for `seconds`, open loop. Resolves once every request is
 * answered with { answers, lagMs (how late each request left, a check on the generator),
 * lastSentAt (epoch ms) }.
 */
export async function createOpenLoop(cluster, { perSecond, seconds, stages, prefix }) {
  const definition = stageDefinitions(stages);
  const count = Math.round(perSecond * seconds);
  const intervalMs = 1000 / perSecond;
  const pending = [];
  const lagMs = [];
  let lastSentAt = null;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const due = t0 + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 0.5) await sleep(wait);
    lagMs.push(Math.max(0, performance.now() - due));
    lastSentAt = Date.now();
    pending.push(createPipeline(cluster, `${prefix}-${i}`, definition));
  }
  return { answers: await Promise.all(pending), lagMs, lastSentAt };
}

/** { non2xx, statusCounts, firstError } of a list of answers. */
export function answerCounts(answers) {
  const statusCounts = {};
  for (const a of answers) statusCounts[a.status] = (statusCounts[a.status] ?? 0) + 1;
  const failed = answers.filter((a) => a.id === null);
  return {
    non2xx: failed.length,
    statusCounts,
    firstError: failed[0] ? `${failed[0].status} ${failed[0].error}` : null,
  };
}
