// Deterministic choices for one fuzz case: a small PRNG seeded from (run seed, case index), and
// fast-check samples drawn with seeds from it, so `FUZZ_SEED=s` + the case index rebuild a case.
import fc from 'fast-check';

/** 32-bit mix of the run seed and the case index (murmur3 finaliser). */
export function caseSeed(seed, index) {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

export class Dice {
  constructor(seed) {
    this.state = seed >>> 0 || 0x2545f491;
  }
  /** mulberry32 */
  u32() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  float() {
    return this.u32() / 4294967296;
  }
  chance(p) {
    return this.float() < p;
  }
  /** Integer in [lo, hi]. */
  int(lo, hi) {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }
  pick(list) {
    if (list.length === 0) throw new Error('pick from an empty list');
    return list[Math.floor(this.float() * list.length)];
  }
  /** A key of `weights` ({ name: weight }), drawn in proportion to its weight; undefined if all are 0. */
  weighted(weights) {
    const entries = Object.entries(weights).filter(([, w]) => w > 0);
    if (entries.length === 0) return undefined;
    let r = this.float() * entries.reduce((s, [, w]) => s + w, 0);
    for (const [name, w] of entries) if ((r -= w) < 0) return name;
    return entries[entries.length - 1][0];
  }
  /** A version-4 UUID drawn from this dice. */
  uuid() {
    const hex = Array.from({ length: 4 }, () => this.u32().toString(16).padStart(8, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }
  /** One value of a fast-check arbitrary, from a seed this dice draws. */
  sample(arb) {
    return fc.sample(arb, { seed: this.u32() | 0, numRuns: 1 })[0];
  }
}
