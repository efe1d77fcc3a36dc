import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CronExpression } from './cron.js';
import { parseCron } from './cron.js';
import type { PlanInput } from './plan.js';
import { nextTick, ticksBetween } from './plan.js';

const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe', // 30-minute DST
  'Asia/Kolkata', // +05:30, no DST
  'America/Santiago', // transitions at local midnight
  'Pacific/Chatham', // +12:45 / +13:45
] as const;

const EPOCH = new Date(0);
const MIN = 60_000;
const FROM = Date.UTC(2024, 0, 1);
const TO = Date.UTC(2031, 0, 1);

// ---- An independent view of wall-clock time (plain Intl and Date, none of zone.ts) ----------

interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  dow: number;
}
const formats = new Map<string, Intl.DateTimeFormat>();

/** UTC offset of `zone` at `t` in ms. */
function offset(zone: string, t: number): number {
  let f = formats.get(zone);
  if (f === undefined) {
    const n = 'numeric';
    const options = { year: n, month: n, day: n, hour: n, minute: n, second: n } as const;
    formats.set(
      zone,
      (f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', ...options })),
    );
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, Number(x.value)]));
  const whole = Math.floor(t / 1000) * 1000;
  return Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day, p.hour, p.minute, p.second) - whole;
}

/** Wall fields of local milliseconds (the fields read as UTC). */
function fields(local: number): Wall {
  const d = new Date(local);
  const [year, month, day] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
  return { year, month, day, hour: d.getUTCHours(), minute: d.getUTCMinutes(), dow: d.getUTCDay() };
}
const wall = (zone: string, t: number): Wall => fields(t + offset(zone, t));

function matches(c: CronExpression, w: Wall): boolean {
  const dom = c.daysOfMonth.includes(w.day);
  const dow = c.daysOfWeek.includes(w.dow);
  const day = c.domRestricted && c.dowRestricted ? dom || dow : dom && dow;
  return (
    day && c.months.includes(w.month) && c.hours.includes(w.hour) && c.minutes.includes(w.minute)
  );
}

const oracleStats = { shifted: 0, secondCopies: 0 };

/** Brute force over every minute of (after, until]: the §14.3 tick set, built from its definition. */
function oracle(c: CronExpression, zone: string, after: number, until: number): number[] {
  const out = new Set<number>();
  const start = Math.floor(after / MIN) * MIN - 6 * 60 * MIN; // gaps of up to 6 h start before `after`
  const lookBack = 12 * 60 * MIN;
  const offsets = new Map<number, number>();
  const off = (t: number): number => {
    let o = offsets.get(t);
    if (o === undefined) offsets.set(t, (o = offset(zone, t)));
    return o;
  };
  for (let t = start; t <= until; t += MIN) {
    const before = off(t - MIN);
    const now = off(t);
    if (now > before) {
      // A gap starts at t: wall times [t+before, t+now) do not exist; each fires at itself − before.
      for (let local = t + before; local < t + now; local += MIN) {
        if (matches(c, fields(local))) {
          out.add(local - before);
          oracleStats.shifted += 1;
        }
      }
    }
    if (!matches(c, fields(t + now))) continue;
    // Fixed hour: the second copy of a repeated wall time (the same wall time an offset change earlier) does not fire.
    const drop = off(Math.floor((t - lookBack) / MIN) * MIN) - now;
    const secondCopy = drop > 0 && off(t - drop) === now + drop;
    if (secondCopy) oracleStats.secondCopies += 1;
    if (!(c.hourIsFixed && secondCopy)) out.add(t);
  }
  return [...out].filter((t) => t > after && t <= until).sort((a, b) => a - b);
}

// ---- Generators ------------------------------------------------------------------------------

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

function item(lo: number, hi: number, names?: readonly string[], base = 0): fc.Arbitrary<string> {
  const value =
    names === undefined
      ? fc.integer({ min: lo, max: hi }).map(String)
      : fc.oneof(
          fc.integer({ min: lo, max: hi }).map(String),
          fc
            .constantFrom(...names.map((n, i) => ({ n, i })))
            .filter(({ i }) => i + base >= lo && i + base <= hi)
            .map(({ n }) => n.toLowerCase()),
        );
  const pair = fc
    .tuple(fc.integer({ min: lo, max: hi }), fc.integer({ min: lo, max: hi }))
    .map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const);
  const step = fc.integer({ min: 1, max: Math.min(hi - lo + 1, 12) });
  return fc.oneof(
    fc.constant('*'),
    value,
    pair.map(([a, b]) => `${a}-${b}`),
    step.map((s) => `*/${s}`),
    fc.tuple(pair, step).map(([[a, b], s]) => `${a}-${b}/${s}`),
    fc.tuple(fc.integer({ min: lo, max: hi }), step).map(([a, s]) => `${a}/${s}`),
  );
}
const field = (lo: number, hi: number, names?: readonly string[], base = 0): fc.Arbitrary<string> =>
  fc.array(item(lo, hi, names, base), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(','));

const SAMPLES = ['@hourly', '@daily', '@midnight', '*/15 * * * *', '30 2 * * *', '30 1 * * *'];
SAMPLES.push('0 * * * *', '45 1 * * *', '0 0 * * *', '*/10 0-3 * * *', '15,45 * * * *');

/** Valid expressions: any fields, and many with `*` day fields, so that they fire on transition days. */
const expression = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(field(0, 59), field(0, 23), field(1, 31), field(1, 12, MONTHS, 1), field(0, 7, DAYS))
      .map((f) => f.join(' ')),
  },
  { weight: 3, arbitrary: fc.tuple(field(0, 59), field(0, 23)).map(([m, h]) => `${m} ${h} * * *`) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(field(0, 59), field(0, 23), field(1, 31), field(0, 7, DAYS))
      .map(([m, h, d, w]) => `${m} ${h} ${d} * ${w}`),
  },
  { weight: 1, arbitrary: fc.constantFrom(...SAMPLES) },
);

const TRANSITIONS = new Map<string, number[]>();
/** Instants (to the hour) where the zone's offset changes between FROM and TO. */
function transitions(zone: string): number[] {
  let list = TRANSITIONS.get(zone);
  if (list === undefined) {
    list = [];
    for (let day = FROM; day < TO; day += 86_400_000) {
      if (offset(zone, day) === offset(zone, day + 86_400_000)) continue;
      for (let t = day; t < day + 86_400_000; t += 3_600_000)
        if (offset(zone, t) !== offset(zone, t + 3_600_000)) list.push(t);
    }
    TRANSITIONS.set(zone, list);
  }
  return list;
}

/** Zone and reference instant: anywhere in 2024–2030, or within two days of a DST transition. */
const zoneAndInstant = fc.constantFrom(...ZONES).chain((zone) => {
  const near = transitions(zone);
  const anywhere = fc.integer({ min: FROM, max: TO });
  if (near.length === 0) return fc.tuple(fc.constant(zone), anywhere);
  const nearby = fc
    .tuple(fc.constantFrom(...near), fc.integer({ min: -2 * 86_400_000, max: 2 * 86_400_000 }))
    .map(([t, d]) => t + d);
  return fc.tuple(fc.constant(zone), fc.oneof(anywhere, nearby));
});

/** A DST zone and an instant 1..28 hours before one of its transitions. */
const aroundTransition = fc
  .constantFrom(...ZONES.filter((z) => transitions(z).length > 0))
  .chain((zone) =>
    fc.tuple(
      fc.constant(zone),
      fc
        .tuple(fc.constantFrom(...transitions(zone)), fc.integer({ min: 1, max: 28 * 60 }))
        .map(([t, m]) => t - m * MIN),
    ),
  );

/** Any reference instant: anywhere, near a transition, or just before one. */
const reference = fc.oneof(zoneAndInstant, aroundTransition);

const cronOf = (e: string): CronExpression => {
  const parsed = parseCron(e);
  if (!parsed.ok || parsed.cron === null)
    throw new Error(`generator made an unusable expression: ${e}`);
  return parsed.cron;
};

// ---- Properties ------------------------------------------------------------------------------

describe('cron planning properties (fast-check)', () => {
  it(
    'nextTick > after; iteration strictly increases, never repeats; ticksBetween agrees with it',
    { timeout: 60_000 },
    () => {
      fc.assert(
        fc.property(expression, reference, (e, [zone, ref]) => {
          const plan: PlanInput = { kind: 'Cron', cronExpression: e, timeZone: zone };
          const seen: number[] = [];
          let t: Date | null = new Date(ref);
          for (let i = 0; i < 25; i++) {
            const next: Date | null = nextTick(plan, EPOCH, t);
            if (next === null) break;
            expect(next.getTime()).toBeGreaterThan(t.getTime());
            seen.push(next.getTime());
            t = next;
          }
          expect(new Set(seen).size).toBe(seen.length);
          if (seen.length === 0) return;
          const last = seen[seen.length - 1] as number;
          const all = ticksBetween(plan, EPOCH, new Date(ref), new Date(last), 1000);
          expect(all.total).toBe(seen.length);
          expect(all.ticks.map((d) => d.getTime())).toEqual(seen);
          const latest = ticksBetween(plan, EPOCH, new Date(ref), new Date(last), 3);
          expect(latest.ticks.map((d) => d.getTime())).toEqual(seen.slice(-3));
          expect(latest.total).toBe(seen.length);
        }),
        { numRuns: 150 },
      );
    },
  );

  it(
    'every tick shows a matching wall time in the zone, or is a spring-forward shift of one',
    { timeout: 60_000 },
    () => {
      fc.assert(
        fc.property(expression, reference, (e, [zone, ref]) => {
          const c = cronOf(e);
          const plan: PlanInput = { kind: 'Cron', cronExpression: e, timeZone: zone };
          let t: Date | null = new Date(ref);
          for (let i = 0; i < 15 && t !== null; i++) {
            t = nextTick(plan, EPOCH, t);
            if (t === null) break;
            const at = t.getTime();
            if (matches(c, wall(zone, at))) continue;
            // Shifted: the offset rose within the last 6 hours and, read with the offset before, the wall time matches.
            const before = offset(zone, at - 6 * 3_600_000);
            expect(before).toBeLessThan(offset(zone, at));
            expect(matches(c, wall('UTC', at + before))).toBe(true);
          }
        }),
        { numRuns: 150 },
      );
    },
  );

  it(
    'ticks in a 30-hour window around a transition equal a minute-by-minute brute force of §14.3',
    { timeout: 60_000 },
    () => {
      fc.assert(
        fc.property(expression, aroundTransition, (e, [zone, ref]) => {
          const c = cronOf(e);
          const until = ref + 30 * 3_600_000;
          const got = ticksBetween(
            { kind: 'Cron', cronExpression: e, timeZone: zone },
            EPOCH,
            new Date(ref),
            new Date(until),
            5000,
          );
          const expected = oracle(c, zone, ref, until);
          expect(got.ticks.map((d) => d.toISOString())).toEqual(
            expected.map((t) => new Date(t).toISOString()),
          );
          expect(got.total).toBe(expected.length);
        }),
        { numRuns: 80 },
      );
      // The runs did meet both DST cases, so the comparison above is not vacuous.
      expect(oracleStats.shifted).toBeGreaterThan(0);
      expect(oracleStats.secondCopies).toBeGreaterThan(0);
    },
  );
});
