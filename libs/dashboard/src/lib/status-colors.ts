// Badge colours for statuses. Chosen by hand rather than Mantine's filled shades, several of
// which (yellow, green, blue 6 with white text) fall below WCAG AA's 4.5:1 for small text; the
// unit test checks every pair.

export interface Tone {
  fg: string;
  bg: string;
}

export const TONES = {
  neutral: { fg: '#343a40', bg: '#f1f3f5' },
  active: { fg: '#1558a0', bg: '#e7f5ff' },
  waiting: { fg: '#0b6475', bg: '#e3fafc' },
  attention: { fg: '#8f3a00', bg: '#fff4e6' },
  good: { fg: '#1d6b2f', bg: '#ebfbee' },
  bad: { fg: '#b02525', bg: '#fff5f5' },
} as const satisfies Record<string, Tone>;

export type ToneName = keyof typeof TONES;

const BY_STATUS: Record<string, ToneName> = {
  // pipelines and stages
  NotStarted: 'neutral',
  Pending: 'waiting',
  Running: 'active',
  Paused: 'attention',
  RetryScheduled: 'attention',
  Throttled: 'waiting',
  WaitingForApproval: 'attention',
  Completed: 'good',
  Failed: 'bad',
  Skipped: 'neutral',
  Cancelled: 'neutral',
  // schedules, runs, health
  Active: 'good',
  Archived: 'neutral',
  Created: 'active',
  Queued: 'waiting',
  // webhooks and their deliveries
  Delivered: 'good',
  Enabled: 'good',
  Disabled: 'neutral',
  healthy: 'good',
  degraded: 'attention',
  failing: 'bad',
  idle: 'neutral',
  // the fleet and its events
  Online: 'good',
  Draining: 'attention',
  Offline: 'neutral',
  started: 'active',
  stopping: 'attention',
  stopped: 'neutral',
  stage_started: 'active',
  stage_completed: 'good',
  stage_failed: 'bad',
  lease_lost: 'attention',
  error: 'bad',
  custom: 'neutral',
};

export function toneOf(status: string): Tone {
  return TONES[BY_STATUS[status] ?? 'neutral'];
}

function channel(hex: string, offset: number): number {
  const c = parseInt(hex.slice(offset, offset + 2), 16) / 255;
  return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** WCAG 2 relative luminance of a #rrggbb colour. */
export function luminance(hex: string): number {
  return 0.2126 * channel(hex, 1) + 0.7152 * channel(hex, 3) + 0.0722 * channel(hex, 5);
}

/** WCAG 2 contrast ratio of two #rrggbb colours (1..21). */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}
