// Scales for the Overview's bar chart: a "nice" axis maximum and tick values, so the bars of a
// quiet hour and a busy one both read well.

/** The smallest 1/2/5 × 10^k at or above `max` (at least 1). */
export function niceMax(max: number): number {
  if (!Number.isFinite(max) || max <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= max) return step * power;
  }
  return 10 * power;
}

/**
 * Ticks from 0 to `top` at a 1/2/5 × 10^k step that divides `top`, at most `count` steps, so the
 * top line is always labelled.
 */
export function ticks(top: number, count = 5): number[] {
  const step = tickStep(top, count);
  const out: number[] = [];
  for (let value = 0; value <= top; value += step) out.push(value);
  return out;
}

function tickStep(top: number, count: number): number {
  for (let power = 1; power <= top; power *= 10) {
    const fit = [1, 2, 5].map((m) => m * power).find((s) => top / s <= count && top % s === 0);
    if (fit !== undefined) return fit;
  }
  return top || 1;
}

/** "14:05" for a bucket start, in the viewer's zone. */
export function bucketLabel(iso: string, locale?: string): string {
  return new Intl.DateTimeFormat(locale, {
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(new Date(iso));
}
